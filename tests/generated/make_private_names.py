"""Writes tests/generated/private_names: a model whose LayerNormalization leaves its
optional Mean output unnamed while the model's own values are named
unused_N and vN, the names kiln once gave such private values (one of them
was bound to a later value of the same name). Run with the venv's python
(onnx, numpy); `kiln check tests/generated/private_names` must pass."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "private_names")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
nodes = [
    # Y, (no Mean), InvStdDev: the middle output is the private value, id 4
    helper.make_node("LayerNormalization", ["x", "g", "b"], ["v1", "", "istd"], name="ln"),
    helper.make_node("Relu", ["v1"], ["v4"], name="relu"),  # v4: once the private value's name
    helper.make_node("Neg", ["v4"], ["unused_4"], name="neg"),  # unused_4: now its base name
    helper.make_node("Dropout", ["unused_4"], ["unused_3", ""], name="drop2"),
    helper.make_node("Add", ["unused_3", "x"], ["t"], name="add"),
    helper.make_node("Mul", ["t", "istd"], ["y"], name="mul"),
]
inits = [numpy_helper.from_array(np.array([1.0, 2.0, 0.5], np.float32), "g"),
         numpy_helper.from_array(np.array([0.0, 0.1, -0.1], np.float32), "b")]
model = helper.make_model(helper.make_graph(nodes, "private_names", [x], [y], inits),
                          opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model, full_check=True)
os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
onnx.save(model, os.path.join(out, "model.onnx"))
xv = np.array([[-1.5, 0.0, 2.0], [3.0, -0.25, 0.5]], dtype=np.float32)
mean = xv.mean(-1, keepdims=True)
istd = 1 / np.sqrt(((xv - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
ln = (xv - mean) * istd * np.array([1.0, 2.0, 0.5]) + np.array([0.0, 0.1, -0.1])
yv = ((-np.maximum(ln, 0) + xv) * istd).astype(np.float32)
for name, arr, f in [("x", xv, "input_0.pb"), ("y", yv, "output_0.pb")]:
    t = numpy_helper.from_array(arr, name)
    with open(os.path.join(out, "test_data_set_0", f), "wb") as fh:
        fh.write(t.SerializeToString())
