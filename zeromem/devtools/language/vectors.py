"""MiniLM vectors for the labelled set: the product's own embedder (`builtin:minilm`), whatever the environment
configures, because the chatter head is applied to the MiniLM vectors zeromem stores for every memory."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from zeromem.core.adapters.embeddings import embedder_for

MINILM, MINILM_DIMENSION = "builtin:minilm", 384


def minilm_vectors(texts: Iterable[str], *, workers: int, cache_dir: Path) -> dict[str, np.ndarray]:
    """Each distinct text's vector, embedded once."""
    unique = list(dict.fromkeys(texts))
    vectors = embedder_for(MINILM, MINILM_DIMENSION, workers, cache_dir).embed_batch(unique)
    return dict(zip(unique, vectors, strict=True))
