"""make_names_model.py OUT.onnx — the ONNX model run_injection.py patches:
Relu(MatMul(x, w)) whose every name and doc string is a 16-byte placeholder
("Z" * 12 + a 4-byte tag), so that a hostile string of 12 bytes can replace
the Z's in the serialized bytes without changing any length. Run once with
onnx installed; the output is checked in as names.onnx."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def ph(tag):
    assert len(tag) == 4
    return "Z" * 12 + tag


w = helper.make_tensor(ph("@w0_"), TensorProto.FLOAT, [4, 4], np.linspace(-1, 1, 16).astype(np.float32).tolist())
mm = helper.make_node("MatMul", [ph("@in_"), ph("@w0_")], [ph("@t0_")], name=ph("@n0_"), doc_string=ph("@doc"))
relu = helper.make_node("Relu", [ph("@t0_")], [ph("@out")], name=ph("@n1_"), doc_string=ph("@doc"))
graph = helper.make_graph([mm, relu], ph("@gr_"),
                          [helper.make_tensor_value_info(ph("@in_"), TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info(ph("@out"), TensorProto.FLOAT, [1, 4])],
                          initializer=[w], doc_string=ph("@doc"))
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], doc_string=ph("@doc"))
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
