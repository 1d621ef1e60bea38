"""`createapikey` prints the secret alone on stdout (pipe it into a secret store) and its label on stderr."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from zeromem.core.selectors import apikey_authenticate


@pytest.mark.django_db
def test_stdout_carries_only_the_secret_and_stderr_the_label():
    out, err = io.StringIO(), io.StringIO()

    call_command("createapikey", "--tenant", "acme", "--name", "ci", stdout=out, stderr=err)

    secret = out.getvalue()
    assert secret.endswith("\n") and secret.count("\n") == 1
    assert apikey_authenticate(secret=secret.strip()) is not None
    assert "acme" in err.getvalue() and secret.strip() not in err.getvalue()
