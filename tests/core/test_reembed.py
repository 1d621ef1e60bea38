import pytest
from django.core.management import call_command

from tests.factories import ingest
from zeromem.models import Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")


def test_reembed_fills_missing_vectors_and_all_recomputes_every_one(tenant, capsys):
    ingest(tenant, [f"memory {i}" for i in range(3)], embed=False)
    call_command("reembed")
    assert not Memory.objects.filter(embedding__isnull=True).exists()
    assert "embedded 3 of 3" in capsys.readouterr().out
    call_command("reembed", "--all")
    assert "embedded 3 of 3" in capsys.readouterr().out
