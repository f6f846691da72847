"""xl_two_segments.py — Transformer-XL's memory across calls: the generated
C, called on two segments in a row by examples/xl_app.c with the memory
carried in its state struct, must give the logits ONNX Runtime gives when
the exported model (states as explicit inputs and outputs) is run twice,
segment 2 fed the memory segment 1 returned. Also checks that the memory
matters (segment 2 differs from a cold start on the same ids). With KILN
and SCRIPT, also the interpreter: `kiln run SCRIPT` on segment 1 with no
state inputs (it starts from the script's init values), and on segment 2
with segment 1's memory passed as --input.

    python xl_two_segments.py MODEL.onnx XL_APP WORKDIR [KILN SCRIPT]

Prints the max errors; exit 1 on a mismatch (rtol 1e-4, atol 1e-5)."""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

model, app, work = sys.argv[1:4]
sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
inputs = {i.name: i for i in sess.get_inputs()}
outputs = [o.name for o in sess.get_outputs()]
ids_shape = inputs["ids"].shape
states = [n for n in inputs if n != "ids"]
rng = np.random.default_rng(7)
vocab = next(o for o in sess.get_outputs() if o.name == "logits").shape[-1]
segments = [rng.integers(0, vocab, ids_shape).astype(np.int64) for _ in range(2)]


def zeros_like_input(name):
    i = inputs[name]
    return np.zeros(i.shape, np.int64 if "int64" in i.type else np.float32)


# ONNX Runtime: every state starts at zero (the script's init), then segment
# 2 gets what segment 1 left in each "<state>.next" output
state = {n: zeros_like_input(n) for n in states}
want = []
for ids in segments:
    res = dict(zip(outputs, sess.run(None, {"ids": ids, **state})))
    want.append(res["logits"])
    state = {n: res[n + ".next"] for n in states}
cold = sess.run(["logits"], {"ids": segments[1], **{n: zeros_like_input(n) for n in states}})[0]

ids_path, out_path = os.path.join(work, "ids.bin"), os.path.join(work, "logits.bin")
np.concatenate(segments).tofile(ids_path)
subprocess.run([app, ids_path, out_path], check=True, stdout=subprocess.DEVNULL)
got = np.fromfile(out_path, np.float32).reshape((2,) + want[0].shape)


def compare(what, got, want):
    err = np.abs(got - want)
    bad = err > 1e-5 + 1e-4 * np.abs(want)
    print(f"{what}: max_abs_err {err.max():.3g}  {'ok' if not bad.any() else 'MISMATCH'}")
    return not bad.any()


def save_pb(name, a):
    path = os.path.join(work, name + ".pb")
    onnx.save_tensor(numpy_helper.from_array(a, name), path)
    return f"{name}={path}"


def interpreter(kiln, script, ids, state):
    """Logits of `kiln run` on ids, with the states given (none: init)."""
    out = os.path.join(work, "interp")
    os.makedirs(out, exist_ok=True)
    cmd = [kiln, "run", script, "--out", out, "--input", save_pb("ids", ids)]
    for name, a in state.items():
        cmd += ["--input", save_pb(name, a)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    for k in range(len(outputs)):
        t = onnx.load_tensor(os.path.join(out, f"output_{k}.pb"))
        if t.name == "logits":
            return numpy_helper.to_array(t)


ok = True
for k in range(2):
    ok = compare(f"segment {k + 1}, generated C (state struct)", got[k], want[k]) and ok
if len(sys.argv) > 5:
    kiln, script = sys.argv[4:6]
    ok = compare("segment 1, kiln run from the init values", interpreter(kiln, script, segments[0], {}),
                 want[0]) and ok
    first = dict(zip(outputs, sess.run(None, {"ids": segments[0], **{n: zeros_like_input(n) for n in states}})))
    ok = compare("segment 2, kiln run with segment 1's memory",
                 interpreter(kiln, script, segments[1], {n: first[n + ".next"] for n in states}),
                 want[1]) and ok
memory_effect = np.abs(want[1] - cold).max()
print(f"segment 2 with memory vs cold start: max difference {memory_effect:.3g}")
if memory_effect < 1e-3:
    print("the memory had no effect on segment 2; expected it to change the logits")
    ok = False
sys.exit(0 if ok else 1)
