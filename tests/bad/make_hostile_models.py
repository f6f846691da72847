#!/usr/bin/env python3
"""make_hostile_models.py — the hostile-input cases of issue 12 in kiln's
bad-input corpus, tests/bad/ (beside tools/make_bad_models.py's, in the same
format; run_bad.sh runs both): attributes of the wrong type or referring to
a function outside one, an initializer that clashes with its graph input,
an opset-1 op given the input later opsets added, control flow, a node
that feeds itself, names defined twice, external data that climbs out of
the model's folder, impossible --passes lists and --shape garbage.

For case NAME this writes tests/bad/NAME.onnx (when the case has a model)
and tests/bad/NAME.expect:
    line 1: kiln's arguments; "@OUT" is an output .c path in a fresh
            folder, any other "@" the path of NAME.onnx
    line 2: a substring the error line must contain
It also writes the two tensor files tests/bad/run_cli.sh's cases use:
tensor_f32_2x3.pb and tensor_i64_2x3.pb.

The files are committed, so run_bad.sh needs no Python. Regenerate with:
  build/venv/bin/python tests/bad/make_hostile_models.py
"""
import os

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
F32, I64 = TensorProto.FLOAT, TensorProto.INT64
CASES = {}


def vi(name, dt=F32, shape=(2, 3)):
    return helper.make_tensor_value_info(name, dt, list(shape))


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "hostile", inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="kiln-hostile",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def relu_model():
    return model([helper.make_node("Relu", ["X"], ["Y"], name="relu")], [vi("X")], [vi("Y")])


def case(name, expect, args="compile @ -o @OUT"):
    def wrap(fn):
        CASES[name] = (fn, args, expect)
        return fn
    return wrap


def softmax_with(attr):
    n = helper.make_node("Softmax", ["X"], ["Y"], name="sm")
    n.attribute.append(attr)
    return model([n], [vi("X")], [vi("Y")])


# ---- attributes -----------------------------------------------------------------

@case("attr_string_for_int", "node 'sm' (Softmax): attribute 'axis' is a string; expected an int")
def _():
    return softmax_with(helper.make_attribute("axis", "0"))


@case("attr_tensor_for_int", "node 'sm' (Softmax): attribute 'axis' is a tensor; expected an int")
def _():
    return softmax_with(helper.make_attribute("axis", numpy_helper.from_array(np.array(0, np.int64))))


@case("attr_float_for_ints", "node 't' (Transpose): attribute 'perm' is a float; expected a list of ints")
def _():
    n = helper.make_node("Transpose", ["X"], ["Y"], name="t", perm=1.0)
    return model([n], [vi("X")], [vi("Y", shape=(3, 2))])


@case("attr_ref_outside_function", "attribute 'axis' refers to an attribute 'ax' of an enclosing function")
def _():
    return softmax_with(AttributeProto(name="axis", ref_attr_name="ax", type=AttributeProto.INT))


# ---- initializers, inputs, names ---------------------------------------------------

def add_w(w, declared):
    n = helper.make_node("Add", ["X", "W"], ["Y"], name="add")
    return model([n], [vi("X"), declared], [vi("Y")], [w])


@case("initializer_input_shape_clash",
      "graph input 'W' declares f32[2,3], but its initializer is f32[3,2]; expected the same type and shape")
def _():
    return add_w(numpy_helper.from_array(np.ones((3, 2), np.float32), "W"), vi("W"))


@case("initializer_input_type_clash", "graph input 'W' declares i64[2,3], but its initializer is f32[2,3]")
def _():
    return add_w(numpy_helper.from_array(np.ones((2, 3), np.float32), "W"), vi("W", I64))


@case("initializer_redefined_by_node", "output 'W' is already defined")
def _():
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "W")
    nodes = [helper.make_node("Relu", ["X"], ["W"], name="relu"),
             helper.make_node("Add", ["X", "W"], ["Y"], name="add")]
    return model(nodes, [vi("X")], [vi("Y")], [w])


@case("cycle_self", "cycle")
def _():
    nodes = [helper.make_node("Add", ["X", "T"], ["T"], name="self"),
             helper.make_node("Relu", ["T"], ["Y"], name="relu")]
    return model(nodes, [vi("X")], [vi("Y")])


# ---- ops and opsets -------------------------------------------------------------------

@case("reshape_opset1_two_inputs",
      "node 'rs' (Reshape): 2 inputs at opset 1; expected 1 (shape is an attribute before opset 5")
def _():
    s = numpy_helper.from_array(np.array([3, 2], np.int64), "S")
    n = helper.make_node("Reshape", ["X", "S"], ["Y"], name="rs", shape=[6])
    return model([n], [vi("X")], [vi("Y", shape=(3, 2))], [s], opset=1)


@case("squeeze_opset11_two_inputs", "node 'sq' (Squeeze): 2 inputs at opset 11; expected 1")
def _():
    a = numpy_helper.from_array(np.array([0], np.int64), "A")
    n = helper.make_node("Squeeze", ["X", "A"], ["Y"], name="sq")
    return model([n], [vi("X", shape=(1, 3))], [vi("Y", shape=(3,))], [a], opset=11)


@case("reducemean_opset17_axes_input", "node 'rm' (ReduceMean): 2 inputs at opset 17; expected 1")
def _():
    a = numpy_helper.from_array(np.array([1], np.int64), "A")
    n = helper.make_node("ReduceMean", ["X", "A"], ["Y"], name="rm", axes=[0])
    return model([n], [vi("X")], [vi("Y", shape=(1, 3))], [a], opset=17)


@case("if_subgraph", "node 'if' (If): control flow is not supported")
def _():
    branch = helper.make_graph([helper.make_node("Relu", ["X"], ["T"])], "branch", [], [vi("T")])
    n = helper.make_node("If", ["C"], ["Y"], name="if", then_branch=branch, else_branch=branch)
    return model([n], [vi("C", TensorProto.BOOL, ()), vi("X")], [vi("Y")])


@case("loop_subgraph", "node 'loop' (Loop): control flow is not supported (attribute 'body' is a subgraph)")
def _():
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]),
                              helper.make_node("Relu", ["x"], ["x_out"])], "body",
                             [vi("i", I64, ()), vi("c", TensorProto.BOOL, ()), vi("x")],
                             [vi("c_out", TensorProto.BOOL, ()), vi("x_out")])
    n = helper.make_node("Loop", ["N", "", "X"], ["Y"], name="loop", body=body)
    return model([n], [vi("N", I64, ()), vi("X")], [vi("Y")])


# ---- external data ----------------------------------------------------------------------

def external_w(location):
    w = TensorProto(name="W", data_type=F32, dims=[2, 3], data_location=TensorProto.EXTERNAL)
    e = w.external_data.add()
    e.key, e.value = "location", location
    return add_w(w, vi("W"))


@case("external_data_absolute", "external data has no valid 'location' (got '/etc/passwd')")
def _():
    return external_w("/etc/passwd")


@case("external_data_nested_escape", "external data has no valid 'location' (got 'sub/../../w.bin')")
def _():
    return external_w("sub/../../w.bin")


# ---- command lines --------------------------------------------------------------------------

@case("passes_out_of_order", "'infer' is listed after 'plan', but runs before it",
      "compile @ -o @OUT --passes=plan,infer,bind")
def _():
    return relu_model()


@case("passes_twice", "'infer' is listed twice", "compile @ -o @OUT --passes=bind,infer,infer,plan")
def _():
    return relu_model()


@case("passes_plan_without_infer", "'plan' needs every value's type and shape, which the infer pass gives",
      "compile @ -o @OUT --passes=bind,plan")
def _():
    return relu_model()


@case("passes_fuse_without_infer", "'fuse' needs every value's type and shape",
      "compile @ -o @OUT --passes=fuse,dce,plan")
def _():
    return relu_model()


for name, dims in [("trailing_x", "2x"), ("trailing_comma", "2x3,"), ("plus", "+2x3"), ("double_x", "2xx3")]:
    @case("shape_garbage_" + name, "--shape X=%s: expected dims like 1x16x64" % dims,
          "compile @ -o @OUT --shape X=" + dims)
    def _():
        return relu_model()


@case("shape_empty_name", "--shape =2x3: expected NAME=DIMS", "compile @ -o @OUT --shape =2x3")
def _():
    return relu_model()


@case("output_dir_is_file", "a file of that name is in the way", "compile @ -o @/out.c")
def _():
    return relu_model()


def main():
    for name, (fn, args, expect) in sorted(CASES.items()):
        m = fn()
        if m is not None:
            with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
                f.write(m.SerializeToString())
        with open(os.path.join(OUT, name + ".expect"), "w") as f:
            f.write(args + "\n" + expect + "\n")
    for name, a in [("tensor_f32_2x3", np.arange(6, dtype=np.float32).reshape(2, 3)),
                    ("tensor_i64_2x3", np.arange(6, dtype=np.int64).reshape(2, 3))]:
        with open(os.path.join(OUT, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
    print("wrote %d cases to %s" % (len(CASES), OUT))


if __name__ == "__main__":
    main()
