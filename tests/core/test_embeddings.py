"""The embedder: the per-channel int8 MiniLM derived from the installed package (exact integer products on any CPU)
and checked against recorded vectors, texts embedded side by side in the caller's order, and the per-process cache
of search queries."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from tokenizers import Tokenizer

from zeromem.core.adapters import embeddings
from zeromem.core.adapters.embeddings import (
    MiniLMEmbedder,
    ReferenceMismatch,
    embed_query,
    minilm_unchecked,
    query_cache_stats,
    reference_check,
)
from zeromem.core.adapters.minilm_int8 import derive

TEXTS = ["Coffee.", "Dana moved the weekly release to Thursday because QA is out on Mondays.",
         "The nightly ETL failed again when the warehouse ran out of disk at 2 AM, third time this month.", "ok",
         "My daughter started violin lessons on Tuesdays.", "We use PostgreSQL 16 with pgvector."]


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> tuple[embeddings._MiniLM, Path]:
    """The model as a first use derives it, in a cache directory of its own."""
    return minilm_unchecked(cache_dir=tmp_path_factory.mktemp("model-cache"))


def test_the_derived_model_gives_the_recorded_reference_vectors(derived):
    model, path = derived
    reference_check(model.embed, path)  # raises on a mismatch
    assert path.name.startswith("minilm-l6-int8pc-") and [p.name for p in path.parent.iterdir()] == [path.name]


def test_the_derived_model_runs_its_products_in_int8(derived):
    ops = {node.op_type for node in onnx.load(str(derived[1])).graph.node}
    assert {"MatMulInteger", "DynamicQuantizeLinear"} <= ops


def test_the_derived_models_products_are_exact_on_this_cpu(derived):
    """Every weight fits 7 bits, and a MatMul of the model run by ONNX Runtime on full-range u8 activations gives
    the exact integer sums: what a CPU with int8 dot-product instructions computes, so the vectors agree across CPUs.
    (8-bit weights saturate the pairwise 16-bit sums of AVX2: on such a CPU nearly every output differs.)"""
    graph = onnx.load(str(derived[1])).graph
    initialisers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    weights = [initialisers[n.input[1]] for n in graph.node if n.op_type == "MatMulInteger"]
    assert len(weights) == 36 and all(w.dtype == np.int8 and w.min() >= -64 and w.max() <= 64 for w in weights)
    activations = np.random.default_rng(0).integers(0, 256, size=(24, weights[0].shape[0]), dtype=np.uint8)
    zero_point = np.uint8(128)
    products = _matmul_integer(activations, zero_point, weights[0])
    exact = (activations.astype(np.int64) - int(zero_point)) @ weights[0].astype(np.int64)
    assert np.array_equal(products, exact)


def test_the_derived_model_stays_close_to_the_packages_fp32_computation(derived):
    package = _package_vectors(TEXTS)
    ours = np.stack([derived[0].embed(text) for text in TEXTS])
    cosines = (package * ours).sum(axis=1)
    # 7-bit weights (see above) cost a little precision; the shortest texts move most ("ok": 0.963).
    assert cosines.mean() >= 0.985 and cosines.min() >= 0.96


def test_the_reference_check_raises_on_a_mismatch(derived, tmp_path):
    model, path = derived
    reference = json.loads(embeddings.REFERENCE_PATH.read_text())
    reference["vectors"][1] = list(np.roll(reference["vectors"][1], 1))
    altered = tmp_path / "reference.json"
    altered.write_text(json.dumps(reference))
    with pytest.raises(ReferenceMismatch, match="Dana: we moved"):
        reference_check(model.embed, path, altered)


def test_a_mismatch_is_remembered_and_raised_again_without_loading_again(monkeypatch, tmp_path):
    loads = []

    def mismatching(*, cache_dir):
        loads.append(cache_dir)
        raise ReferenceMismatch("differs")

    monkeypatch.setattr(embeddings, "minilm_load", mismatching)
    embedder = MiniLMEmbedder(workers=2, cache_dir=tmp_path)
    for _ in range(2):
        with pytest.raises(ReferenceMismatch):
            embedder.embed_batch(["hello"])
    assert len(loads) == 1


def test_two_processes_deriving_at_once_both_end_with_a_whole_model(tmp_path):
    source, _ = embeddings.minilm_files()
    target = tmp_path / "derived.onnx"
    errors: list[BaseException] = []

    def derive_into_target():
        try:
            derive(source=source, target=target)
        except Exception as error:  # reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=derive_into_target) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and [p.name for p in tmp_path.iterdir()] == ["derived.onnx"]


def test_a_batch_comes_back_in_the_callers_order_each_text_as_if_alone(settings):
    embedder = MiniLMEmbedder(workers=2, cache_dir=Path(settings.ZEROMEMORY_MODEL_CACHE_DIR))
    texts = TEXTS * 3
    together = embedder.embed_batch(texts)
    alone = np.stack([embedder.embed_batch([text])[0] for text in texts])
    assert together.shape == (len(texts), 384) and np.array_equal(together, alone)


def test_a_repeated_query_skips_the_model_and_counts_as_a_hit(hash_embedder, monkeypatch):
    calls = _counting_embed_batch(monkeypatch)
    first, second = embed_query("where is the coffee?"), embed_query("where is the coffee?")
    assert first == second and len(calls) == 1
    assert query_cache_stats().hits >= 1


def test_the_query_cache_keeps_only_the_most_recently_used_queries(hash_embedder, settings, monkeypatch):
    settings.ZEROMEMORY_QUERY_CACHE_SIZE = 2
    calls = _counting_embed_batch(monkeypatch)
    for query in ("a cat", "a dog", "a cat", "a bird", "a cat", "a dog"):
        embed_query(query)
    assert calls == [["a cat"], ["a dog"], ["a bird"], ["a dog"]]


def test_a_failed_query_embedding_is_not_cached(hash_embedder, monkeypatch):
    def down(texts):
        raise RuntimeError("embedder down")

    monkeypatch.setattr(embeddings.get_embedder(), "embed_batch", down)
    assert embed_query("where is the coffee?") is None
    monkeypatch.undo()
    assert embed_query("where is the coffee?") is not None


def _counting_embed_batch(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    embedder = embeddings.get_embedder()
    calls: list[list[str]] = []
    original = embedder.embed_batch

    def counting(texts):
        calls.append(list(texts))
        return original(texts)

    monkeypatch.setattr(embedder, "embed_batch", counting)
    return calls


def _matmul_integer(activations: np.ndarray, zero_point: np.uint8, weights: np.ndarray) -> np.ndarray:
    """One `MatMulInteger` as ONNX Runtime runs it on this CPU."""
    rows, inner = activations.shape
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "w", "a_zero_point"], ["y"])], "one_matmul",
        [helper.make_tensor_value_info("a", onnx.TensorProto.UINT8, [rows, inner]),
         helper.make_tensor_value_info("a_zero_point", onnx.TensorProto.UINT8, [])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT32, [rows, weights.shape[1]])],
        [numpy_helper.from_array(weights, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"a": activations, "a_zero_point": np.array(zero_point)})[0]


def _package_vectors(texts: list[str]) -> np.ndarray:
    """The installed package's model as ONNX Runtime runs it (its int8 weights folded back to fp32), through the
    pipeline of sentence-transformers: a padded batch, mean pooling over the real tokens, L2."""
    model, tokenizer_file = embeddings.minilm_files()
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_length=embeddings.MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    pooled = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
