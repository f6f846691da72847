"""make_signal_cases.py — DFT, STFT, window and MelWeightMatrix cases for
kiln check (backend-test layout under tests/generated/signal/), with ONNX
Runtime's outputs as the reference after checking them against ONNX's own
reference evaluator. Run with the venv that has onnx and onnxruntime:

    build/venv/bin/python tools/make_signal_cases.py tests/generated/signal

- dft17_complex_pad: opset-17 DFT of complex f32[2,12,3,2] along axis 1
  (an attribute), dft_length 16 (the signal zero-padded).
- dft20_real_onesided: opset-20 DFT of real f32[3,20,1], axis -2 as an
  input, dft_length 15 (the signal cut), onesided.
- dft20_inverse: opset-20 inverse DFT of complex f64[2,9,2] along axis 1.
- dft20_inverse_pow2: the same of f32[3,8,4,2], a length the C does by
  radix-2 FFT (as it does dft17_complex_pad's 16, stft_hann's 32 and
  mel's 64; the other lengths are direct sums).
- stft_hann: a HannWindow of 32 feeding STFT of real f32[2,200,1], frame
  step 10, onesided (the usual spectrogram front end).
- mel: MelWeightMatrix of 10 filters over a 64-point DFT at 16 kHz,
  20 Hz to 8 kHz, times the magnitude-squared STFT bins (a MatMul)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def write_case(folder, model, feeds):
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    ref = ReferenceEvaluator(model).run(None, feeds)
    for w, r in zip(want, ref):
        np.testing.assert_allclose(w, r, rtol=1e-4, atol=1e-4)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    outs = [o.name for o in model.graph.output]
    for kind, items in (("input", list(feeds.items())), ("output", list(zip(outs, want)))):
        for k, (name, value) in enumerate(items):
            t = numpy_helper.from_array(value, name)
            with open(os.path.join(folder, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def model(nodes, inputs, outputs, inits, opset):
    g = helper.make_graph(nodes, "signal", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset < 21 else 10
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def main(out):
    rng = np.random.default_rng(20)
    F, D = TensorProto.FLOAT, TensorProto.DOUBLE

    x = rng.standard_normal((2, 12, 3, 2)).astype(np.float32)
    m = model([helper.make_node("DFT", ["x", "len"], ["y"], axis=1)],
              [vi("x", F, x.shape)], [vi("y", F, [2, 16, 3, 2])], [i64("len", 16)], 17)
    write_case(os.path.join(out, "dft17_complex_pad"), m, {"x": x})

    x = rng.standard_normal((3, 20, 1)).astype(np.float32)
    m = model([helper.make_node("DFT", ["x", "len", "axis"], ["y"], onesided=1)],
              [vi("x", F, x.shape)], [vi("y", F, [3, 8, 2])],
              [i64("len", 15), i64("axis", -2)], 20)
    write_case(os.path.join(out, "dft20_real_onesided"), m, {"x": x})

    x = rng.standard_normal((2, 9, 2))
    m = model([helper.make_node("DFT", ["x", "", "axis"], ["y"], inverse=1)],
              [vi("x", D, x.shape)], [vi("y", D, [2, 9, 2])], [i64("axis", 1)], 20)
    write_case(os.path.join(out, "dft20_inverse"), m, {"x": x})

    x = rng.standard_normal((3, 8, 4, 2)).astype(np.float32)
    m = model([helper.make_node("DFT", ["x", "", "axis"], ["y"], inverse=1)],
              [vi("x", F, x.shape)], [vi("y", F, [3, 8, 4, 2])], [i64("axis", 1)], 20)
    write_case(os.path.join(out, "dft20_inverse_pow2"), m, {"x": x})

    x = rng.standard_normal((2, 200, 1)).astype(np.float32)
    m = model([helper.make_node("HannWindow", ["n"], ["w"]),
               helper.make_node("STFT", ["x", "step", "w"], ["y"])],
              [vi("x", F, x.shape)], [vi("y", F, [2, 17, 17, 2])],
              [i64("n", 32), i64("step", 10)], 17)
    write_case(os.path.join(out, "stft_hann"), m, {"x": x})

    x = rng.standard_normal((1, 64, 1)).astype(np.float32)
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.float32), name)
    m = model([helper.make_node("STFT", ["x", "step", "", "fl"], ["s"]),
               helper.make_node("Mul", ["s", "s"], ["s2"]),
               helper.make_node("ReduceSum", ["s2", "last"], ["p"], keepdims=0),
               helper.make_node("MelWeightMatrix", ["bins", "fl", "rate", "lo", "hi"], ["mw"]),
               helper.make_node("MatMul", ["p", "mw"], ["y"])],
              [vi("x", F, x.shape)], [vi("y", F, [1, 1, 10])],
              [i64("step", 64), i64("fl", 64), i64("last", [-1]), i64("bins", 10),
               i64("rate", 16000), f32("lo", 20.0), f32("hi", 8000.0)], 17)
    write_case(os.path.join(out, "mel"), m, {"x": x})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/generated/signal")
