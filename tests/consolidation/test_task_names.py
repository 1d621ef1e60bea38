"""Triggers send tasks by their registered name (so nothing imports the task modules upwards): every name they
send must be registered in a plain process that only set Django up, as a web process is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from consolidation.triggers import TASK_NAMES
from consolidation.webhooks import WEBHOOK_DELIVER_TASK
from zeromem.core.tasks import memories_embed_task, memories_parse_task

PROBE = ("import django, json; django.setup(); from celery import current_app; "
         "print(json.dumps(sorted(current_app.tasks)))")


def test_every_name_a_trigger_sends_is_registered_in_a_web_process():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "zeromem.settings"}
    registered = json.loads(subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                                           check=True).stdout.splitlines()[-1])

    assert {*TASK_NAMES, WEBHOOK_DELIVER_TASK, memories_embed_task.name, memories_parse_task.name} <= set(registered)
