#!/usr/bin/env python3
"""make_conv_cases.py OUTDIR — small convolutions by constant weights for
the fold_bn and conv_gemm passes, each a folder in the ONNX backend-test
layout (model.onnx, test_data_set_0/) with ONNX Runtime's outputs
(tests/conv/cases; tests/tests.cmake checks each with `kiln check`, the
generated C and the interpreter).

Cases: a 3x3 stride-2 pad-1 conv + BatchNormalization + Relu (the GEMM's
relu epilogue); a 1x1 conv over channels (+ per-channel Mul and Add) at
batch 2; an asymmetric-pad dilated conv with no bias; SAME_UPPER with an
odd stride and a 1-D and a 3-D conv; a conv feeding two readers (the
BatchNormalization after it is then not folded); a grouped conv and a
ConvTranspose with BatchNormalization (folded, but kept off the GEMM);
a chain of convs reading convs (their rows channels last); a 5x5 conv
whose rows exceed 1 MiB (the GEMM's row tiles outside its panels); a
3-D conv over 8 channels (x transposed to channels last first); a
residual block whose activations stay channels last through MaxPool, a
residual Add, Relu, a depthwise conv, HardSwish, a per-channel Mul and a
squeeze-and-excitation block (conv_gemm's layout); an SE block at batch 1
(ReduceMean and ReduceMax over the positions of channels-last [1, P, C]);
depthwise convs channels last, 2-D and 3-D, whose windows lie inside x,
overhang it, or never fit in it (conv.c's runs of each);
a residual block of 3x3 convs on Winograd's F(4x4, 3x3) at batch 2 (odd
image, residual Add and Relu in the output transform's epilogue) and one
on F(2x2, 3x3) with asymmetric pads and channels off the vector width;
a 7x7 stride-2 stem and a dilated 3x3 conv with a residual Add whose
rows exceed 1 MiB (ConvBlocks: the rows a block at a time); AveragePools
on channels-last forms, unpadded and with pads that do not count, and
one whose pads count (kept NCHW); 1 x K convs on an image one row high,
x's batch declared -1; ConvTransposes whose kernel is their stride (the
detector head's 2x2 stride-2 pair after a conv, with BN and Relu; 1 x 3
at batch 2 reading x; 3-D) as GEMMs, and three that stay direct loops
(overlapping taps, cropping pads, output_padding).
Shapes are off every GEMM tile (odd channels and positions). Run with the
venv: /tmp/venv/bin/python tools/make_conv_cases.py tests/conv/cases"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

rng = np.random.default_rng(7)


def const(name, shape, lo=-1.0, hi=1.0):
    return numpy_helper.from_array(rng.uniform(lo, hi, shape).astype(np.float32), name)


def bn_inits(p, m):
    return [const(p + "_scale", [m], 0.5, 1.5), const(p + "_beta", [m], -0.3, 0.3),
            const(p + "_mean", [m], -0.3, 0.3), const(p + "_var", [m], 0.5, 1.5)]


def bn(p, x, y):
    return helper.make_node("BatchNormalization", [x, p + "_scale", p + "_beta", p + "_mean", p + "_var"], [y],
                            name=p, epsilon=1e-3)


def save(out, name, nodes, inits, x_shape, y_shapes, x_decl=None):
    """x_decl: x's shape as the model declares it (default x_shape)."""
    ys = [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in y_shapes]
    for v in ys:
        v.type.tensor_type.ClearField("shape")
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_decl or x_shape)], ys,
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, {"x": x})
    with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    for i, (n, y) in enumerate(zip(y_shapes, outs)):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(y, n).SerializeToString())


def main():
    out = sys.argv[1]
    # 3x3 stride 2 pad 1, BN, Relu: 24 -> 48 channels as in PP-OCR, 13x21 input
    save(out, "conv3x3_s2_bn_relu",
         [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", kernel_shape=[3, 3], strides=[2, 2],
                           pads=[1, 1, 1, 1]),
          bn("bn", "t", "n"), helper.make_node("Relu", ["n"], ["y"], name="relu")],
         [const("w", [48, 24, 3, 3], -0.2, 0.2), const("b", [48])] + bn_inits("bn", 48), [1, 24, 13, 21], ["y"])
    # 1x1 over channels, then Mul [1,M,1,1] and Add [M,1,1], batch 2
    save(out, "conv1x1_mul_add",
         [helper.make_node("Conv", ["x", "w"], ["t"], name="pw"),
          helper.make_node("Mul", ["t", "c"], ["m"], name="mul"),
          helper.make_node("Add", ["d", "m"], ["y"], name="add")],
         [const("w", [37, 19, 1, 1], -0.3, 0.3), const("c", [1, 37, 1, 1]), const("d", [37, 1, 1])],
         [2, 19, 5, 7], ["y"])
    # dilated, asymmetric pads, no bias, a rectangular kernel
    save(out, "conv_dilated_pads",
         [helper.make_node("Conv", ["x", "w"], ["y"], name="dil", kernel_shape=[3, 2], dilations=[2, 3],
                           pads=[2, 0, 1, 3], strides=[1, 2])],
         [const("w", [11, 5, 3, 2], -0.3, 0.3)], [1, 5, 9, 10], ["y"])
    # SAME_UPPER with stride 3, 1-D
    save(out, "conv1d_same_upper",
         [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="c1d", kernel_shape=[4], strides=[3],
                           auto_pad="SAME_UPPER")],
         [const("w", [6, 3, 4], -0.4, 0.4), const("b", [6])], [1, 3, 17], ["y"])
    # 3-D, pads 1
    save(out, "conv3d",
         [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="c3d", kernel_shape=[2, 3, 3], pads=[1, 1, 1, 0, 1, 1])],
         [const("w", [5, 2, 2, 3, 3], -0.3, 0.3), const("b", [5])], [1, 2, 3, 4, 5], ["y"])
    # the conv's output read twice: BN not folded, both outputs checked
    save(out, "conv_two_readers",
         [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          bn("bn", "t", "y"), helper.make_node("Relu", ["t"], ["z"], name="relu")],
         [const("w", [7, 4, 3, 3], -0.3, 0.3), const("b", [7])] + bn_inits("bn", 7), [1, 4, 6, 5], ["y", "z"])
    # grouped conv + BN and ConvTranspose (groups 2) + BN: folded, direct loops
    save(out, "grouped_and_transpose_bn",
         [helper.make_node("Conv", ["x", "wg", "bg"], ["t"], name="gconv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                           group=3),
          bn("bn1", "t", "u"),
          helper.make_node("ConvTranspose", ["u", "wt"], ["v"], name="deconv", kernel_shape=[2, 2], strides=[2, 2],
                           group=2),
          bn("bn2", "v", "y")],
         [const("wg", [6, 2, 3, 3], -0.3, 0.3), const("bg", [6]), const("wt", [6, 2, 2, 2], -0.3, 0.3)]
         + bn_inits("bn1", 6) + bn_inits("bn2", 4), [1, 6, 5, 4], ["y"])
    # convs reading convs, the rows from the GEMM result channels last: 3x3
    # + Relu -> 3x3 stride 2 asymmetric pads -> 1x1 (its rows that result
    # itself) -> 1x1 stride 2; the 1x1's output also read by a Relu (its
    # transpose back kept), batch 2
    save(out, "conv_chain_channels_last",
         [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
          helper.make_node("Conv", ["ar", "w2", "b2"], ["b"], name="c2", kernel_shape=[3, 3], strides=[2, 2],
                           pads=[1, 0, 0, 1]),
          helper.make_node("Conv", ["b", "w3", "b3"], ["c"], name="c3"),
          helper.make_node("Conv", ["c", "w4"], ["y"], name="c4", strides=[2, 2]),
          helper.make_node("Relu", ["c"], ["z"], name="relu2")],
         [const("w1", [7, 5, 3, 3], -0.3, 0.3), const("b1", [7]), const("w2", [6, 7, 3, 3], -0.3, 0.3),
          const("b2", [6]), const("w3", [9, 6, 1, 1], -0.4, 0.4), const("b3", [9]),
          const("w4", [4, 9, 1, 1], -0.4, 0.4)], [2, 5, 9, 11], ["y", "z"])
    # rows A [1024, 300] over 1 MiB and a small weight [300, 36] (a full
    # panel and an edge one): the GEMM walks each row tile over every panel
    save(out, "conv5x5_large_rows",
         [helper.make_node("Conv", ["x", "w", "b"], ["t"], name="c5", kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
          helper.make_node("Relu", ["t"], ["y"], name="relu")],
         [const("w", [36, 12, 5, 5], -0.1, 0.1), const("b", [36])], [1, 12, 32, 32], ["y"])
    # 3-D over 8 channels, x transposed to channels last before its rows
    save(out, "conv3d_channels_last",
         [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="c3d", kernel_shape=[2, 3, 3], strides=[1, 2, 1],
                           pads=[0, 1, 1, 1, 0, 1])],
         [const("w", [5, 8, 2, 3, 3], -0.2, 0.2), const("b", [5])], [1, 8, 3, 5, 4], ["y"])
    # conv_gemm's layout: conv + Relu -> MaxPool 3x3/2 pad 1 -> conv -> Add
    # (the pool's output) -> Relu (also an output: its transpose back kept)
    # -> depthwise 3x3/2 -> HardSwish -> Mul [1,C,1,1] -> squeeze-and-
    # excitation (ReduceMean over H, W -> 1x1 conv -> HardSigmoid -> Mul)
    # -> 1x1 conv, all channels last; 19 channels (off the vector width),
    # batch 2
    save(out, "conv_layout_residual",
         [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
          helper.make_node("MaxPool", ["ar"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                           pads=[1, 1, 1, 1]),
          helper.make_node("Conv", ["p", "w2", "b2"], ["b"], name="c2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          helper.make_node("Add", ["b", "p"], ["s"], name="add"),
          helper.make_node("Relu", ["s"], ["z"], name="relu2"),
          helper.make_node("Conv", ["z", "wd", "bd"], ["d"], name="dw", kernel_shape=[3, 3], strides=[2, 2],
                           pads=[1, 0, 1, 1], group=19),
          helper.make_node("HardSwish", ["d"], ["h"], name="hswish"),
          helper.make_node("Mul", ["h", "c"], ["m"], name="mul"),
          helper.make_node("ReduceMean", ["m"], ["q"], name="squeeze", axes=[2, 3], keepdims=1),
          helper.make_node("Conv", ["q", "wq", "bq"], ["e"], name="excite"),
          helper.make_node("HardSigmoid", ["e"], ["g"], name="gate", alpha=0.2, beta=0.5),
          helper.make_node("Mul", ["m", "g"], ["u"], name="scale"),
          helper.make_node("Conv", ["u", "w3"], ["y"], name="c3")],
         [const("w1", [19, 5, 3, 3], -0.3, 0.3), const("b1", [19]), const("w2", [19, 19, 3, 3], -0.2, 0.2),
          const("b2", [19]), const("wd", [19, 1, 3, 3], -0.5, 0.5), const("bd", [19]), const("c", [1, 19, 1, 1]),
          const("wq", [19, 19, 1, 1], -0.5, 0.5), const("bq", [19]),
          const("w3", [6, 19, 1, 1], -0.4, 0.4)], [2, 5, 11, 13], ["y", "z"])
    # a squeeze-and-excitation block at batch 1: ReduceMean and ReduceMax
    # over H, W of channels-last [1, P, C] (reduce.c's loop over the rows
    # of x), their sum -> 1x1 conv -> Sigmoid -> Mul; 21 channels
    save(out, "conv_se_batch1",
         [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
          helper.make_node("ReduceMean", ["ar"], ["q"], name="mean", axes=[2, 3], keepdims=1),
          helper.make_node("ReduceMax", ["ar"], ["qm"], name="max", axes=[-1, -2], keepdims=1),
          helper.make_node("Add", ["q", "qm"], ["qs"], name="both"),
          helper.make_node("Conv", ["qs", "wq", "bq"], ["e"], name="excite"),
          helper.make_node("Sigmoid", ["e"], ["gt"], name="gate"),
          helper.make_node("Mul", ["ar", "gt"], ["u"], name="scale"),
          helper.make_node("Conv", ["u", "w3"], ["y"], name="c3")],
         [const("w1", [21, 4, 3, 3], -0.3, 0.3), const("b1", [21]), const("wq", [21, 21, 1, 1], -0.5, 0.5),
          const("bq", [21]), const("w3", [5, 21, 1, 1], -0.4, 0.4)], [1, 4, 9, 10], ["y", "qs"])
    # depthwise convs channels last (conv.c's runs: the windows inside x
    # with their taps written out, those overhanging it tap by tap):
    # 1x1 conv -> depthwise 5x5 pad 2, dilation [1, 2] (one inside window a
    # row) -> 3x3 stride [2, 1] asymmetric pads (the last column overhangs)
    # -> 5x3 over 3 rows (no window inside: tap by tap only) -> 1x1 conv;
    # 21 channels (a body of 16 and 5 more), batch 2
    save(out, "conv_depthwise_windows",
         [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1"),
          helper.make_node("Conv", ["a", "wd1", "bd1"], ["d1"], name="dw1", kernel_shape=[5, 5], pads=[2, 2, 2, 2],
                           dilations=[1, 2], group=21),
          helper.make_node("Conv", ["d1", "wd2", "bd2"], ["d2"], name="dw2", kernel_shape=[3, 3], strides=[2, 1],
                           pads=[1, 0, 0, 1], group=21),
          helper.make_node("Conv", ["d2", "wd3"], ["d3"], name="dw3", kernel_shape=[5, 3], pads=[2, 1, 2, 1],
                           group=21),
          helper.make_node("Conv", ["d3", "w2"], ["y"], name="c2")],
         [const("w1", [21, 5, 1, 1], -0.4, 0.4), const("b1", [21]), const("wd1", [21, 1, 5, 5], -0.3, 0.3),
          const("bd1", [21]), const("wd2", [21, 1, 3, 3], -0.4, 0.4), const("bd2", [21]),
          const("wd3", [21, 1, 5, 3], -0.3, 0.3), const("w2", [6, 21, 1, 1], -0.4, 0.4)], [2, 5, 7, 9], ["y"])
    # a 3-D depthwise conv channels last between two 1x1x1 convs: 3x3x3,
    # pads 1, 18 channels
    save(out, "conv_depthwise_3d",
         [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1"),
          helper.make_node("Conv", ["a", "wd", "bd"], ["d"], name="dw", kernel_shape=[3, 3, 3], pads=[1] * 6,
                           group=18),
          helper.make_node("Conv", ["d", "w2"], ["y"], name="c2")],
         [const("w1", [18, 4, 1, 1, 1], -0.4, 0.4), const("b1", [18]), const("wd", [18, 1, 3, 3, 3], -0.3, 0.3),
          const("bd", [18]), const("w2", [5, 18, 1, 1, 1], -0.4, 0.4)], [1, 4, 4, 5, 6], ["y"])
    # Winograd F(4x4, 3x3) (compiler/ops/winograd.c): a stem conv, then a
    # residual block, 3x3 + BN + Relu (16 -> 24 channels: 16- and 8-wide
    # steps) and 3x3 + BN + Add + Relu (24 -> 16), batch 2 on a 19 x 23
    # image (the last tiles' rows and columns partly outside)
    save(out, "conv_winograd_f4_residual",
         [helper.make_node("Conv", ["x", "w0", "b0"], ["s"], name="stem", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          helper.make_node("Relu", ["s"], ["sr"], name="relu0"),
          helper.make_node("Conv", ["sr", "w1"], ["a"], name="ca", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          bn("bn1", "a", "an"), helper.make_node("Relu", ["an"], ["ar"], name="relu1"),
          helper.make_node("Conv", ["ar", "w2"], ["b"], name="cb", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          bn("bn2", "b", "bb"), helper.make_node("Add", ["bb", "sr"], ["r"], name="add"),
          helper.make_node("Relu", ["r"], ["y"], name="relu2")],
         [const("w0", [16, 5, 3, 3], -0.3, 0.3), const("b0", [16]), const("w1", [24, 16, 3, 3], -0.15, 0.15),
          const("w2", [16, 24, 3, 3], -0.15, 0.15)] + bn_inits("bn1", 24) + bn_inits("bn2", 16),
         [2, 5, 19, 23], ["y"])
    # Winograd F(2x2, 3x3): pads top 0, left 2, bottom 1, right 0 (9 x 13
    # outputs: too few 4x4 tiles, enough 2x2 ones), 20 -> 18 channels (the
    # plain C steps), no bias, no activation
    save(out, "conv_winograd_f2_pads",
         [helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], pads=[0, 2, 1, 0])],
         [const("w", [18, 20, 3, 3], -0.2, 0.2)], [1, 20, 10, 13], ["y"])
    # ConvBlocks (compiler/ops/im2row.c): a 7x7 stride-2 stem + BN + Relu,
    # 3 -> 16 channels at batch 2 (rows 2 x 1900 x 147, 2.2 MB: blocks of
    # whole output rows), then a 3x3 conv of dilation 2 (not Winograd's)
    # + BN + the residual Add + Relu (rows 2.2 MB of 144 columns)
    save(out, "conv_blocks_residual",
         [helper.make_node("Conv", ["x", "w0", "b0"], ["s"], name="stem", kernel_shape=[7, 7], strides=[2, 2],
                           pads=[3, 3, 3, 3]),
          bn("bn0", "s", "sn"), helper.make_node("Relu", ["sn"], ["sr"], name="relu0"),
          helper.make_node("Conv", ["sr", "w1"], ["a"], name="dil", kernel_shape=[3, 3], dilations=[2, 2],
                           pads=[2, 2, 2, 2]),
          bn("bn1", "a", "an"), helper.make_node("Add", ["an", "sr"], ["r"], name="add"),
          helper.make_node("Relu", ["r"], ["y"], name="relu1")],
         [const("w0", [16, 3, 7, 7], -0.1, 0.1), const("b0", [16]), const("w1", [16, 16, 3, 3], -0.15, 0.15)]
         + bn_inits("bn0", 16) + bn_inits("bn1", 16), [2, 3, 100, 76], ["y"])
    # AveragePool on channels-last forms (pool.c's emit_avg_last): after a
    # 1x1 conv, PP-OCR's [3, 2] / [3, 2] unpadded pool, and after a second
    # conv a 3x3 / 2 pool with pads that do not count (each window divides
    # by its taps inside x); a 3x3 / 2 pool whose pads count
    # (count_include_pad=1) stays NCHW; 21 channels, batch 2
    save(out, "conv_avgpool_last",
         [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1"),
          helper.make_node("AveragePool", ["a"], ["p"], name="pool32", kernel_shape=[3, 2], strides=[3, 2]),
          helper.make_node("Conv", ["a", "w2", "b2"], ["b"], name="c2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          helper.make_node("AveragePool", ["b"], ["q"], name="pool_pads", kernel_shape=[3, 3], strides=[2, 2],
                           pads=[1, 1, 1, 1]),
          helper.make_node("AveragePool", ["b"], ["r"], name="pool_counted", kernel_shape=[3, 3], strides=[2, 2],
                           pads=[1, 1, 1, 1], count_include_pad=1)],
         [const("w1", [21, 5, 1, 1], -0.5, 0.5), const("b1", [21]), const("w2", [21, 21, 3, 3], -0.2, 0.2),
          const("b2", [21])], [2, 5, 9, 13], ["p", "q", "r"])

    # 1 x K convs on an image one row high (PP-OCRv4's recogniser): the
    # first reads x NCHW, the second its channels-last rows; x declares its
    # batch as dim_value -1 (older exporters' "unknown", a symbolic dim)
    save(out, "conv_row_1xk",
         [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1", kernel_shape=[1, 3], pads=[0, 1, 0, 1]),
          helper.make_node("Relu", ["a"], ["r"], name="relu"),
          helper.make_node("Conv", ["r", "w2", "b2"], ["y"], name="c2", kernel_shape=[1, 3], pads=[0, 1, 0, 1])],
         [const("w1", [24, 8, 1, 3], -0.3, 0.3), const("b1", [24]), const("w2", [16, 24, 1, 3], -0.2, 0.2),
          const("b2", [16])], [1, 8, 1, 40], ["y"], x_decl=[-1, 8, 1, 40])

    # ConvTransposes whose kernel is their stride (conv_gemm: a Linear, then
    # the taps placed channels last), as in PP-OCR's detector head: conv +
    # Relu -> 2x2 stride-2 ConvTranspose + bias + BN (folded) + Relu (the
    # GEMM's epilogue; also an output: its transpose back kept) -> 2x2
    # stride-2 ConvTranspose to one channel -> Sigmoid; 19 and 21 channels
    save(out, "deconv_2x2_bn_relu",
         [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
          helper.make_node("Relu", ["a"], ["ar"], name="relu1"),
          helper.make_node("ConvTranspose", ["ar", "wt1", "bt1"], ["u"], name="up1", kernel_shape=[2, 2],
                           strides=[2, 2]),
          bn("bn", "u", "un"), helper.make_node("Relu", ["un"], ["r"], name="relu2"),
          helper.make_node("ConvTranspose", ["r", "wt2", "bt2"], ["v"], name="up2", kernel_shape=[2, 2],
                           strides=[2, 2]),
          helper.make_node("Sigmoid", ["v"], ["y"], name="sig")],
         [const("w1", [19, 5, 3, 3], -0.3, 0.3), const("b1", [19]), const("wt1", [19, 21, 2, 2], -0.3, 0.3),
          const("bt1", [21]), const("wt2", [21, 1, 2, 2], -0.3, 0.3), const("bt2", [1])] + bn_inits("bn", 21),
         [1, 5, 9, 7], ["y", "r"])
    # a 1 x 3 stride-1 x 3 ConvTranspose with no bias reading x NCHW (its
    # rows an Im2Row), batch 2, 7 -> 10 channels, then a 1x1 conv reading
    # its channels-last form
    save(out, "deconv_1x3_batch2",
         [helper.make_node("ConvTranspose", ["x", "wt"], ["u"], name="up", kernel_shape=[1, 3], strides=[1, 3]),
          helper.make_node("Conv", ["u", "w", "b"], ["y"], name="pw")],
         [const("wt", [7, 10, 1, 3], -0.4, 0.4), const("w", [6, 10, 1, 1], -0.4, 0.4), const("b", [6])],
         [2, 7, 5, 6], ["y"])
    # 3-D: kernel = stride [2, 1, 3], explicit zero pads, auto_pad VALID
    # spelled out, 6 -> 5 channels with a bias
    save(out, "deconv_3d",
         [helper.make_node("ConvTranspose", ["x", "wt", "bt"], ["y"], name="up3d", kernel_shape=[2, 1, 3],
                           strides=[2, 1, 3], pads=[0] * 6, dilations=[1, 1, 1])],
         [const("wt", [6, 5, 2, 1, 3], -0.4, 0.4), const("bt", [5])], [1, 6, 3, 4, 2], ["y"])
    # ConvTransposes that stay conv.c's direct loops: taps that overlap (3x3
    # stride 2, pads 1, output_padding 1), a 2x2 stride 2 whose pads crop
    # the output, and one with output_padding
    save(out, "deconv_kept",
         [helper.make_node("ConvTranspose", ["x", "w1", "b1"], ["y1"], name="overlap", kernel_shape=[3, 3],
                           strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
          helper.make_node("ConvTranspose", ["x", "w2", "b2"], ["y2"], name="cropped", kernel_shape=[2, 2],
                           strides=[2, 2], pads=[0, 1, 0, 1]),
          helper.make_node("ConvTranspose", ["x", "w2"], ["y3"], name="outpad", kernel_shape=[2, 2], strides=[2, 2],
                           output_padding=[1, 0])],
         [const("w1", [9, 6, 3, 3], -0.3, 0.3), const("b1", [6]), const("w2", [9, 4, 2, 2], -0.3, 0.3),
          const("b2", [4])], [1, 9, 5, 6], ["y1", "y2", "y3"])


if __name__ == "__main__":
    main()
