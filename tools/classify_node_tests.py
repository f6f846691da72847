#!/usr/bin/env python3
"""classify_node_tests.py — write tests/node/out_of_scope.txt: the ONNX
backend node tests kiln does not aim to pass, each with its reason.

Run with a Python that has the `onnx` package (e.g. a venv with PyPI onnx):
    python tools/classify_node_tests.py [NODE_DIR] > tests/node/out_of_scope.txt
Everything not listed is in scope: it either passes (tests/node/pass_*.txt)
or is work still to do.
"""
import os
import sys

import onnx

NODE = sys.argv[1] if len(sys.argv) > 1 else "/usr/include/onnx/backend/test/data/node"
TRAINING = {"Adagrad", "Adam", "Momentum", "Gradient"}
RANDOM = {"Bernoulli", "RandomUniformLike", "RandomNormalLike", "RandomUniform", "RandomNormal",
          "Multinomial"}
STRING_OPS = {"StringNormalizer", "TfIdfVectorizer", "RegexFullMatch", "StringConcat",
              "StringSplit"}
CONTROL = {"If", "Loop", "Scan", "SequenceMap"}
F16 = {onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}


def io_kinds(graph):
    kinds = set()
    for v in list(graph.input) + list(graph.output):
        which = v.type.WhichOneof("value")
        if which != "tensor_type":
            kinds.add(which)
        elif v.type.tensor_type.elem_type == onnx.TensorProto.STRING:
            kinds.add("string")
        elif v.type.tensor_type.elem_type in F16:
            kinds.add("f16")
    return kinds


def reason(model):
    ops = {n.op_type for n in model.graph.node}
    domains = {n.domain for n in model.graph.node} - {"", "ai.onnx"}
    kinds = io_kinds(model.graph)
    attrs_f16 = any(a.t.data_type in F16 for n in model.graph.node for a in n.attribute
                    if a.type == onnx.AttributeProto.TENSOR)
    casts_f16 = any(a.name == "to" and a.i in F16 | {onnx.TensorProto.STRING}
                    for n in model.graph.node for a in n.attribute)
    inputs = {v.name for v in model.graph.input}
    if ops & TRAINING or "ai.onnx.preview.training" in domains:
        return "training op (kiln compiles inference)"
    if any(n.op_type == "Dropout" and len(n.input) > 2 and n.input[2] in inputs
           for n in model.graph.node):
        return "training-mode Dropout (random; kiln compiles inference)"
    if ops & RANDOM:
        return "random op (output not reproducible; no fixed reference)"
    if {"sequence_type", "map_type", "optional_type"} & kinds or any(o.startswith(("Sequence", "Optional", "SplitToSequence", "ConcatFromSequence")) for o in ops):
        return "sequence/optional/map values (kiln handles tensors only)"
    if "string" in kinds or ops & STRING_OPS:
        return "string tensors (kiln handles numeric and bool tensors)"
    if "f16" in kinds or attrs_f16 or casts_f16:
        return "float16/bfloat16 (not a kiln dtype yet)"
    if ops & CONTROL:
        return "control flow with subgraphs (not in kiln 0.1)"
    if domains:
        return "non-default domain " + ",".join(sorted(domains))
    return None


def main():
    for name in sorted(os.listdir(NODE)):
        try:
            model = onnx.load(os.path.join(NODE, name, "model.onnx"))
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"{name}\tmodel does not load with onnx: {e}".split("\n")[0])
            continue
        r = reason(model)
        if r:
            print(f"{name}\t{r}")


if __name__ == "__main__":
    main()
