"""The int8 MiniLM that actually computes in int8, derived once per machine from the installed model package.

The package's model stores each weight as int8 plus a per-output-channel scale (`Cast` → `Mul`), which ONNX
Runtime folds back into fp32 at load, so every product runs in fp32. Here those pairs are folded into fp32
initialisers (the very values ONNX Runtime computes) and the graph is re-quantised with dynamic per-channel int8
MatMuls (`MatMulInteger`): the activations are quantised per run. The embedding tables stay fp32, exactly the
package's values.

The weights are re-quantised to 7 bits (`reduce_range`), so that every CPU computes the same exact integer products.
A CPU with int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI) sums u8 × s8 products exactly in 32 bits; one
without them (AVX2) adds each pair of products in 16 bits, which saturates with 8-bit weights (255 × 127 × 2 >
32,767): nearly every output of a full-range MatMul differed there, and the vectors came out at cosine 0.989 to the
same model's on a CPU with VNNI. With 7-bit weights a pair stays below 255 × 64 × 2 = 32,640, so the sums are exact
everywhere and a text gets the same vector on any CPU, to float rounding of the other operators.

Deriving takes ~1.5 s of CPU, so the result is kept in a cache directory under a name fingerprinting the source
model, this recipe and the onnx / onnxruntime versions (an upgrade derives again). No Django here: paths come in
as arguments.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

logger = logging.getLogger(__name__)

# Bump when the derivation changes: the cached file name changes with it.
RECIPE = "minilm-int8-per-channel-matmul-7bit-weights-v2"


class DerivationError(Exception):
    pass


def derived_model(*, source: Path, source_sha256: str, cache_dir: Path) -> Path:
    """The derived model for this source and toolchain, built on first use."""
    fingerprint = hashlib.sha256(
        "|".join((source_sha256, RECIPE, onnx.__version__, onnxruntime.__version__)).encode()).hexdigest()
    target = cache_dir / f"minilm-l6-int8pc-{fingerprint[:16]}.onnx"
    if not target.exists():
        derive(source=source, target=target)
    return target


def derive(*, source: Path, target: Path) -> None:
    """Write the per-channel int8 model to `target`. Built in a temporary directory beside it and renamed into
    place, so a reader never sees half a file and two processes deriving at once both end with a whole one (the
    derivation is deterministic: same bytes)."""
    logger.info("deriving the per-channel int8 embedding model %s from %s (once per toolchain)", target, source)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".deriving-") as work:
            fp32, int8 = Path(work) / "fp32.onnx", Path(work) / "int8.onnx"
            onnx.save(dequantised(onnx.load(str(source))), str(fp32))
            quantize_dynamic(fp32, int8, per_channel=True, weight_type=QuantType.QInt8, reduce_range=True,
                             op_types_to_quantize=["MatMul"])
            os.replace(int8, target)
    except OSError as error:
        raise DerivationError(f"cannot write the derived embedding model to {target.parent} ({error}); "
                              f"set ZEROMEMORY_MODEL_CACHE_DIR to a writable directory") from error


def dequantised(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with every int8 weight's `Cast` → `Mul(scale)` pair replaced by its fp32 value."""
    graph = model.graph
    initialisers = {t.name: t for t in graph.initializer}
    producers = {output: node for node in graph.node for output in node.output}
    folded = {}
    for node in graph.node:
        cast = producers.get(node.input[0]) if node.op_type == "Mul" else None
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in initialisers \
                or node.input[1] not in initialisers:
            continue
        weight = numpy_helper.to_array(initialisers[cast.input[0]])
        scale = numpy_helper.to_array(initialisers[node.input[1]])
        folded[node.output[0]] = numpy_helper.from_array(weight.astype(np.float32) * scale, node.output[0])
    nodes = [n for n in graph.node if not (n.op_type == "Mul" and n.output[0] in folded)]
    _replace(graph, _live(nodes, graph), [*graph.initializer, *folded.values()])
    leftover = [t.name for t in graph.initializer if t.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)]
    if leftover:
        raise DerivationError(f"the model package quantises {leftover[:3]} in a way this derivation does not know")
    return model


def _live(nodes: list[onnx.NodeProto], graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """`nodes` without those whose outputs nothing reads any more (the Casts of folded weights)."""
    read = {name for node in nodes for name in node.input} | {o.name for o in graph.output}
    return [n for n in nodes if any(output in read for output in n.output)]


def _replace(graph: onnx.GraphProto, nodes: list[onnx.NodeProto], initialisers: list[onnx.TensorProto]) -> None:
    read = {name for node in nodes for name in node.input} | {o.name for o in graph.output}
    kept = [t for t in initialisers if t.name in read]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)
