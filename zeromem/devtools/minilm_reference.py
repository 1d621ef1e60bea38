"""Record the reference vectors the derived int8 MiniLM is checked against at every load
(`zeromem/core/adapters/minilm_reference.json`). Only after a deliberate change of the model, its derivation or the
pinned onnx / onnxruntime: the stored vectors then need `manage.py reembed --all` too.

    python -m zeromem.devtools.minilm_reference [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
from pathlib import Path

from zeromem.core.adapters.embeddings import REFERENCE_PATH, minilm_unchecked, toolchain

# Our own sentences (no third-party text in the repository): a short one, a chat turn with a number and a date,
# one with accents and symbols, and one past the model's 256 word pieces (truncated).
TEXTS = [
    "Coffee.",
    "Dana: we moved the weekly release to Thursday 14:00 because the QA team is out on Mondays.",
    "Zoë's café in Zürich serves crème brûlée — 12 € — and the Wi-Fi password is on the receipt!",
    " ".join(f"Item {i}: the deployment of service {i} finished after {i * 7} seconds without errors."
             for i in range(40)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache-dir", default=None, help="derive here (default: a fresh temporary directory)")
    cache_dir = parser.parse_args().cache_dir
    with tempfile.TemporaryDirectory() as scratch:
        model, _ = minilm_unchecked(cache_dir=Path(cache_dir or scratch))
        vectors = [[round(float(x), 6) for x in model.embed(text)] for text in TEXTS]
    record = {"recorded_with": f"{toolchain()}, {platform.machine()}", "texts": TEXTS, "vectors": vectors}
    REFERENCE_PATH.write_text(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {len(TEXTS)} reference vectors to {REFERENCE_PATH}")


if __name__ == "__main__":
    main()
