import numpy as np
import pytest
from django.core.management import CommandError, call_command

from tests.factories import ingest
from zeromem.core import services
from zeromem.core.adapters import embeddings
from zeromem.models import Memory

pytestmark = pytest.mark.usefixtures("hash_embedder")


def _old_model_vectors() -> None:
    """Every memory carries a vector of some other model (a constant one)."""
    Memory.objects.update(embedding=[1.0] + [0.0] * (embeddings.get_embedder().dimension - 1))


def _is_current(memory: Memory) -> bool:
    return np.allclose(memory.embedding, embeddings.get_embedder().embed_batch([memory.content])[0], atol=1e-6)


def test_reembed_fills_missing_vectors(tenant, capsys):
    ingest(tenant, [f"memory {i}" for i in range(3)], embed=False)
    call_command("reembed")
    assert not Memory.objects.filter(embedding__isnull=True).exists()
    assert "embedded 3 of 3" in capsys.readouterr().out


def test_all_replaces_every_vector_in_place_page_by_page(tenant, capsys):
    ingest(tenant, [f"memory {i}" for i in range(5)])
    _old_model_vectors()
    call_command("reembed", "--all", "--batch", "2")
    assert all(_is_current(m) for m in Memory.objects.all())
    captured = capsys.readouterr()
    assert "re-embedded 5 of 5" in captured.out and "resume: --all --after" in captured.err


def test_all_resumes_behind_the_id_a_stopped_run_reported(tenant):
    ingest(tenant, [f"memory {i}" for i in range(4)])
    _old_model_vectors()
    ids = sorted(Memory.objects.values_list("id", flat=True))
    call_command("reembed", "--all", "--after", str(ids[1]))
    assert [_is_current(Memory.objects.get(id=i)) for i in ids] == [False, False, True, True]


def test_a_failing_embedder_stops_the_run_and_keeps_the_old_vectors(tenant, monkeypatch):
    ingest(tenant, [f"memory {i}" for i in range(3)])
    _old_model_vectors()

    def down(texts):
        raise RuntimeError("embedder down")

    monkeypatch.setattr(embeddings.get_embedder(), "embed_batch", down)
    with pytest.raises(CommandError, match=r"Resume with: manage.py reembed --all$"):
        call_command("reembed", "--all")
    assert all(m.embedding[0] == 1.0 for m in Memory.objects.all())


def test_a_memory_edited_while_its_page_was_embedded_keeps_the_vector_of_its_new_text(tenant, monkeypatch):
    [memory_id] = ingest(tenant, ["the release is on Monday"])
    _old_model_vectors()
    embed_texts = services.embed_texts

    def edited_meanwhile(texts):
        vectors = embed_texts(texts)
        Memory.objects.filter(id=memory_id).update(content="the release is on Thursday", content_hash="edited",
                                                   embedding=[0.0, 1.0] + [0.0] * (len(vectors[0]) - 2))
        return vectors

    monkeypatch.setattr(services, "embed_texts", edited_meanwhile)
    assert services.memories_reembed() == 0
    assert Memory.objects.get(id=memory_id).embedding[1] == 1.0


def test_a_blank_memory_has_no_vector_to_replace_and_does_not_stop_the_run(tenant):
    ingest(tenant, ["memory 1", "memory 2"])
    Memory.objects.filter(content="memory 1").update(content=" ", embedding=None)
    assert services.memories_reembed() == 1
