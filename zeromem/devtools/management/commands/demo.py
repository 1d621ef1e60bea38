from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from zeromem.devtools.demo import demo_run


class Command(BaseCommand):
    help = "A guided tour on the embedded defaults: ingest a real conversation, search it, print a summary."

    def handle(self, *args: Any, **options: Any) -> None:
        demo_run(say=self.stdout.write)
