"""make_data.py — seeded random inputs for a model and ONNX Runtime's outputs
on them, written in the ONNX backend-test layout that `kiln check` reads.

    python make_data.py MODEL.onnx OUT_DIR [--seed N] [--range NAME=LO..HI]...
                        [--pad NAME=ID]...

Writes OUT_DIR/input_K.pb (graph input order) and OUT_DIR/output_K.pb.
Float inputs are standard normal. Integer inputs are uniform in LO..HI
(inclusive) when --range names them; otherwise, when the input indexes a
constant table directly (Gather on an initializer: token ids into an
embedding), in 0 .. rows-1 of that table; otherwise 0..1. Bool inputs are
fair coin flips. --pad NAME=ID sets the last quarter of every row of NAME
(its last axis) to ID, like a padded batch, so padding masks have work to
do. The ONNX model is what `kiln export` wrote from a Lua
script, so its outputs are an independent reference for kiln's generated C
and interpreter.
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def parse_ranges(items):
    ranges = {}
    for item in items:
        name, _, span = item.partition("=")
        lo, sep, hi = span.partition("..")
        if not name or not sep:
            sys.exit(f"make_data.py: --range {item}: expected NAME=LO..HI")
        ranges[name] = (int(lo), int(hi))
    return ranges


def parse_pads(items):
    pads = {}
    for item in items:
        name, sep, pad_id = item.partition("=")
        if not name or not sep:
            sys.exit(f"make_data.py: --pad {item}: expected NAME=ID")
        pads[name] = int(pad_id)
    return pads


def gather_rows(graph, name):
    """Rows of the initializer a Gather(axis 0) indexes with `name`, or None."""
    tables = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type != "Gather" or len(node.input) < 2 or node.input[1] != name:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        table = tables.get(node.input[0])
        if table is not None and axis == 0 and len(table.dims) > 0:
            return int(table.dims[0])
    return None


def random_input(rng, graph, value, ranges):
    t = value.type.tensor_type
    shape = [d.dim_value for d in t.shape.dim]
    dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if value.name in ranges:
        lo, hi = ranges[value.name]
    else:
        rows = gather_rows(graph, value.name)
        lo, hi = (0, rows - 1) if rows else (0, 1)
    return rng.integers(lo, hi + 1, shape).astype(dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--range", action="append", default=[])
    ap.add_argument("--pad", action="append", default=[])
    args = ap.parse_args()
    model = onnx.load(args.model)
    graph = model.graph
    initialized = {t.name for t in graph.initializer}
    inputs = [v for v in graph.input if v.name not in initialized]
    rng = np.random.default_rng(args.seed)
    ranges = parse_ranges(args.range)
    feeds = {v.name: random_input(rng, graph, v, ranges) for v in inputs}
    for name, pad_id in parse_pads(args.pad).items():
        seq = feeds[name].shape[-1]
        feeds[name][..., seq - seq // 4:] = pad_id
    session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    outputs = session.run(None, feeds)
    os.makedirs(args.out_dir, exist_ok=True)
    for k, v in enumerate(inputs):
        tensor = numpy_helper.from_array(feeds[v.name], v.name)
        with open(os.path.join(args.out_dir, f"input_{k}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())
    for k, (o, value) in enumerate(zip(graph.output, outputs)):
        tensor = numpy_helper.from_array(np.asarray(value), o.name)
        with open(os.path.join(args.out_dir, f"output_{k}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())


if __name__ == "__main__":
    main()
