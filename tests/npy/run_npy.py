#!/usr/bin/env python3
"""run_npy.py KILN [FIXTURE_DIR] — kiln's .npy tensor files (compiler/frontend/npy.c).

numpy is the reference throughout: it writes every input file and reads
back every file kiln writes.

  types    each element type kiln reads (<f4 <f8 <f2 <i8 <i4 <i2 |i1 |u1
           <u2 <u4 <u8 |b1) and shapes (0-d, empty, 1-d, up to rank 8) in
           .npy versions 1.0, 2.0 and 3.0, through an Identity model:
           `kiln run --input X=x.npy --out D --out-format=npy` must give
           back the same array (dtype, shape and bytes) and print the
           values numpy prints
  pb_same  `kiln run` of FIXTURE_DIR's model with its input as .npy prints
           exactly what it prints with the input as .pb
  check    `kiln check` of a data set folder of .npy files passes (the
           generated C and --interp), and one whose output file has the
           wrong shape or type fails with one line naming that file
  bench    `kiln bench --input X=x.npy` times the given data
  bad      damaged, lying or unsupported files: exit status 1, nothing on
           stdout, one stderr line "kiln: FILE: ..." with the reason; for
           --out, no file left behind
Prints one line per case and "N passed, N failed"; exits 1 if any failed.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KILN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "models", "encoder_2l_op14")
WORK = tempfile.mkdtemp(prefix="kiln-npy.")
results = []


def report(name, why):
    results.append(why is None)
    print(("ok   %s" % name) if why is None else ("FAIL %s: %s" % (name, why)))


def kiln(*args, cwd=None):
    p = subprocess.run([KILN, *args], capture_output=True, text=True, cwd=cwd, timeout=300)
    return p.returncode, p.stdout, p.stderr


def identity_model(path, dtype, shape):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    g = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"], name="id")], "npy",
                          [helper.make_tensor_value_info("X", elem, list(shape))],
                          [helper.make_tensor_value_info("Y", elem, list(shape))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def sample(dtype, shape, rng):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "f":
        a = rng.standard_normal(shape).astype(dt)
        if a.size > 2:  # the values printing and byte comparison must keep
            a.flat[0], a.flat[1] = -0.0, dt.type(1e-3)
        return a
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    if a.size > 1:
        a.flat[0], a.flat[-1] = info.min, info.max
    return a


def printed(a):
    """kiln run's values for a tensor: '%.9g' for f32, '%.17g' for f64 and
    f16, integers and bools as ints; the first 64 of more than 72."""
    flat = a.reshape(-1)
    fmt = "%.9g" if a.dtype == np.float32 else "%.17g"
    shown = flat if flat.size <= 72 else flat[:64]
    vals = [fmt % float(v) if a.dtype.kind == "f" else "%d" % int(v) for v in shown]
    if flat.size > 72:
        vals.append("... (%d more)" % (flat.size - 64))
    return vals


def save_version(path, a, version):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=version)


# ---- types -------------------------------------------------------------------

TYPES = ["<f4", "<f8", "<f2", "<i8", "<i4", "<i2", "|i1", "|u1", "<u2", "<u4", "<u8", "|b1"]
SHAPES = [(), (0,), (2, 0, 3), (1,), (7,), (2, 3), (2, 3, 4), (1, 2, 1, 2, 1, 2, 1, 3)]


def check_types():
    rng = np.random.default_rng(12)
    for dtype in TYPES:
        for shape in SHAPES:
            for version in [(1, 0), (2, 0), (3, 0)] if shape == (2, 3) else [None]:
                name = "types %s %s%s" % (dtype, "x".join(map(str, shape)) or "scalar",
                                          " v%d.0" % version[0] if version else "")
                d = tempfile.mkdtemp(dir=WORK)
                a = sample(dtype, shape, rng)
                x, model, out = os.path.join(d, "x.npy"), os.path.join(d, "m.onnx"), os.path.join(d, "out")
                os.mkdir(out)
                if version:
                    save_version(x, a, version)
                else:
                    np.save(x, a)
                identity_model(model, dtype, shape)
                rc, so, se = kiln("run", model, "--input", "X=" + x, "--out", out, "--out-format=npy")
                why = None
                if rc != 0:
                    why = "exit status %d: %s" % (rc, se.strip())
                else:
                    b = np.load(os.path.join(out, "output_0.npy"))
                    if b.dtype != a.dtype or b.shape != a.shape or b.tobytes() != a.tobytes():
                        why = "read back %s %s, expected %s %s" % (b.dtype.str, b.shape, a.dtype.str, a.shape)
                    else:
                        vals = so.strip().split(" = [", 1)[1].rstrip("]")
                        vals = vals.split(", ") if vals else []
                        want = printed(a)
                        if vals != want:
                            why = "printed %s, expected %s" % (vals[:4], want[:4])
                report(name, why)


# ---- .npy and .pb give the same run --------------------------------------------

def fixture_inputs():
    data = os.path.join(FIXTURE, "test_data_set_0")
    ins = sorted(f for f in os.listdir(data) if f.startswith("input_"))
    outs = sorted(f for f in os.listdir(data) if f.startswith("output_"))
    load = lambda f: numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f)))
    return data, ins, outs, load


def check_pb_same():
    model = os.path.join(FIXTURE, "model.onnx")
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    data, ins, _, load = fixture_inputs()
    d = tempfile.mkdtemp(dir=WORK)
    pb_args, npy_args = [], []
    for name, f in zip(names, ins):
        npy = os.path.join(d, f.replace(".pb", ".npy"))
        np.save(npy, load(f))
        pb_args += ["--input", "%s=%s" % (name, os.path.join(data, f))]
        npy_args += ["--input", "%s=%s" % (name, npy)]
    r1 = kiln("run", model, *pb_args)
    r2 = kiln("run", model, *npy_args)
    why = None
    if r1[0] != 0 or r2[0] != 0:
        why = "exit status %d / %d: %s %s" % (r1[0], r2[0], r1[2].strip(), r2[2].strip())
    elif r1[1] != r2[1] or not r1[1]:
        why = "the outputs differ"
    report("pb_same %s" % os.path.basename(FIXTURE), why)
    # --out writes .pb by default and .npy on request, with the same values
    for fmt in ["pb", "npy"]:
        out = tempfile.mkdtemp(dir=WORK)
        rc, so, se = kiln("run", model, *npy_args, "--out", out, *(["--out-format=npy"] if fmt == "npy" else []))
        got = sorted(os.listdir(out))
        ref = [numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f))) for f in fixture_inputs()[2]]
        why = None
        if rc != 0 or got != ["output_%d.%s" % (k, fmt) for k in range(len(ref))]:
            why = "exit status %d, files %s: %s" % (rc, got, se.strip())
        else:
            for k, r in enumerate(ref):
                p = os.path.join(out, got[k])
                b = np.load(p) if fmt == "npy" else numpy_helper.to_array(onnx.load_tensor(p))
                if b.shape != r.shape or b.dtype != r.dtype or not np.allclose(b, r, rtol=1e-4, atol=1e-5):
                    why = "%s differs from the reference output" % got[k]
        report("out_format %s" % fmt, why)


# ---- kiln check on .npy data -----------------------------------------------------

def npy_set(dst, wrong_output=None):
    """FIXTURE as a folder of .npy files (its model copied)."""
    data, ins, outs, load = fixture_inputs()
    os.makedirs(os.path.join(dst, "test_data_set_0"))
    shutil.copy(os.path.join(FIXTURE, "model.onnx"), dst)
    for f in ins + outs:
        a = load(f)
        if f in outs and wrong_output:
            a = wrong_output(a)
        np.save(os.path.join(dst, "test_data_set_0", f.replace(".pb", ".npy")), a)


def one_line_error(rc, so, se, want, where=None):
    lines = se.splitlines()
    if rc != 1:
        return "exit status %d, expected 1 (stderr: %s)" % (rc, se.strip()[:300])
    if so:
        return "stdout is not empty: %s" % so[:200].replace("\n", "|")
    if len(lines) != 1 or not se.endswith("\n"):
        return "stderr has %d lines, expected 1: %s" % (len(lines), se[:300].replace("\n", "|"))
    if where and not lines[0].startswith("kiln: %s: " % where):
        return "the line does not start with 'kiln: %s: ': %s" % (where, lines[0])
    if want not in lines[0]:
        return "the line lacks '%s': %s" % (want, lines[0])
    return None


def check_check():
    d = os.path.join(WORK, "check_npy")
    npy_set(d)
    for flags in [[], ["--interp"]]:
        rc, so, se = kiln("check", d, *flags)
        why = None if rc == 0 and so.rstrip().endswith("PASS " + d) else \
            "exit status %d: %s %s" % (rc, so[-300:], se.strip())
        report("check npy %s" % (flags[0] if flags else "generated C"), why)
    cases = [("shape", lambda a: a.reshape(-1), "f32["), ("dtype", lambda a: a.astype(np.float64), "f64[")]
    for what, change, want in cases:
        d = os.path.join(WORK, "check_bad_" + what)
        npy_set(d, change)
        out = os.path.join(d, "test_data_set_0", "output_0.npy")
        report("check output wrong %s" % what, one_line_error(*kiln("check", d), want + "", out))
    # a .pb reference output of the wrong shape is named the same way
    d = os.path.join(WORK, "check_bad_pb")
    shutil.copytree(FIXTURE, d)
    out = os.path.join(d, "test_data_set_0", "output_0.pb")
    t = onnx.load_tensor(out)
    a = numpy_helper.to_array(t)
    onnx.save_tensor(numpy_helper.from_array(a.reshape(1, -1), t.name), out)
    report("check output wrong shape pb", one_line_error(*kiln("check", d), "for output", out))
    # input_0.pb and input_0.npy both: which one is meant?
    d = os.path.join(WORK, "check_both")
    shutil.copytree(FIXTURE, d)
    np.save(os.path.join(d, "test_data_set_0", "input_0.npy"), fixture_inputs()[3]("input_0.pb"))
    report("check pb and npy both", one_line_error(*kiln("check", d), "input_0.pb is there too",
                                                   os.path.join(d, "test_data_set_0", "input_0.npy")))


def check_bench():
    d = tempfile.mkdtemp(dir=WORK)
    model, x = os.path.join(d, "m.onnx"), os.path.join(d, "x.npy")
    identity_model(model, "<f4", (4, 8))
    np.save(x, np.ones((4, 8), np.float32))
    rc, so, se = kiln("bench", model, "--input", "X=" + x, "--runs", "3")
    why = None if rc == 0 and "input X: f32[4,8] (given)" in so else "exit status %d: %s %s" % (rc, so[-300:], se)
    report("bench npy input", why)


# ---- bad files -----------------------------------------------------------------

def npy_bytes(header, data=b"", version=1):
    h = header.encode("latin1")
    pre = b"\x93NUMPY" + bytes([version, 0]) + (struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h)))
    return pre + h + data


def hdr(descr="<f4", fortran="False", shape="(2, 3)"):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }\n" % (descr, fortran, shape)


GOOD = np.arange(6, dtype=np.float32).reshape(2, 3).tobytes()
BAD = [
    ("empty", b"", "no .npy magic"),
    ("bad_magic", b"\x93NUMPX" + npy_bytes(hdr(), GOOD)[6:], "no .npy magic"),
    ("pb_named_npy", numpy_helper.from_array(np.ones((2, 3), np.float32)).SerializeToString(), "no .npy magic"),
    ("preamble_cut", npy_bytes(hdr(), GOOD)[:8], "ends inside its preamble"),
    ("version_4", npy_bytes(hdr(), GOOD, version=4), "format version 4.0; expected 1.0, 2.0 or 3.0"),
    ("header_cut", npy_bytes(hdr(), GOOD)[:30], "runs past the end of the file"),
    ("huge_header_length", b"\x93NUMPY\x02\x00\xff\xff\xff\xff{}", "header length 4294967295; expected at most"),
    ("truncated_data", npy_bytes(hdr(), GOOD[:-4]), "20 bytes of data after the header; expected 24"),
    ("trailing_data", npy_bytes(hdr(), GOOD + b"\0\0\0\0"), "28 bytes of data after the header; expected 24"),
    ("lying_shape", npy_bytes(hdr(shape="(200, 300)"), GOOD), "24 bytes of data after the header; expected 240000 for f32[200,300]"),
    ("shape_overflow", npy_bytes(hdr(shape="(4294967296, 4294967296, 4294967296)"), GOOD), "more elements than kiln's limit; expected at most 17179869184"),
    ("dim_too_big", npy_bytes(hdr(shape="(99999999999999999999999,)"), GOOD), "'shape' dim 0 is not a size"),
    ("negative_dim", npy_bytes(hdr(shape="(-2, 3)"), GOOD), "'shape' dim 0 is not a size"),
    ("rank_9", npy_bytes(hdr(shape="(1, 1, 1, 1, 1, 1, 1, 1, 1)"), GOOD), "more than 8 dims"),
    ("shape_not_tuple", npy_bytes(hdr(shape="[2, 3]"), GOOD), "'shape' is not a tuple"),
    ("shape_int", npy_bytes(hdr(shape="(6)"), GOOD), "'shape' is not a tuple"),
    ("fortran_order", npy_bytes(hdr(fortran="True"), GOOD), "fortran_order is True (column-major); expected C order"),
    ("big_endian", npy_bytes(hdr(descr=">f4"), GOOD), "element type '>f4' is big-endian; expected little-endian '<f4'"),
    ("complex", npy_bytes(hdr(descr="<c8"), GOOD), "element type '<c8' is not one kiln reads"),
    ("unicode", npy_bytes(hdr(descr="<U3"), GOOD), "element type '<U3' is not one kiln reads"),
    ("object", npy_bytes(hdr(descr="|O"), GOOD), "element type '|O' is not one kiln reads"),
    ("structured", npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }\n", GOOD),
     "'descr' is not a short string"),
    ("no_shape", npy_bytes("{'descr': '<f4', 'fortran_order': False, }\n", GOOD), "header has no 'shape'"),
    ("extra_key", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}\n", GOOD),
     "header has the key 'x'"),
    ("key_twice", npy_bytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\n", GOOD),
     "header has the key 'descr' twice"),
    ("not_a_dict", npy_bytes("garbage\n", GOOD), "header does not start with '{'"),
    ("nul_in_header", npy_bytes(hdr().replace(" }", "\0}"), GOOD), "control byte 0x00"),
    ("text_after_dict", npy_bytes(hdr().replace("}\n", "} x\n"), GOOD), "text after its closing '}'"),
    ("wrong_dtype_for_model", npy_bytes(hdr(descr="<i4"), GOOD), "i32[2,3] for input 'X'; expected f32[2,3]"),
    ("wrong_shape_for_model", npy_bytes(hdr(shape="(3, 2)"), GOOD), "f32[3,2] for input 'X'; expected f32[2,3]"),
    ("bool_not_0_1", npy_bytes(hdr(descr="|b1"), bytes([0, 1, 2, 0, 1, 0])), "bool element 2 is 2; expected 0 or 1"),
]
BAD_PB = [
    ("pb_truncated", numpy_helper.from_array(np.ones((2, 3), np.float32)).SerializeToString()[:-5],
     "not a serialized TensorProto"),
    ("pb_wrong_dtype", numpy_helper.from_array(np.ones((2, 3), np.int64)).SerializeToString(),
     "i64[2,3] for input 'X'; expected f32[2,3]"),
    ("pb_raw_data_short", None, "raw_data has 20 bytes; expected 24"),
]


def check_bad():
    d = tempfile.mkdtemp(dir=WORK)
    model = os.path.join(d, "m.onnx")
    identity_model(model, "<f4", (2, 3))
    for name, data, want in BAD + BAD_PB:
        ext = ".pb" if name.startswith("pb_") and name != "pb_named_npy" else ".npy"
        path = os.path.join(d, name + ext)
        if data is None:  # raw_data that disagrees with dims
            t = numpy_helper.from_array(np.ones((2, 3), np.float32))
            t.raw_data = t.raw_data[:20]
            data = t.SerializeToString()
        with open(path, "wb") as f:
            f.write(data)
        report("bad %s" % name, one_line_error(*kiln("run", model, "--input", "X=" + path), want, path))
    # a folder, a missing file
    report("bad missing file", one_line_error(*kiln("run", model, "--input", "X=" + d + "/no.npy"),
                                              "cannot open", d + "/no.npy"))
    # --out-format=npy for a bf16 output: refused, nothing written
    g = helper.make_graph([helper.make_node("Cast", ["X"], ["Y"], name="c", to=TensorProto.BFLOAT16)], "bf",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("Y", TensorProto.BFLOAT16, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    bf = os.path.join(d, "bf.onnx")
    onnx.save(m, bf)
    x = os.path.join(d, "x2.npy")
    np.save(x, np.ones(2, np.float32))
    out = os.path.join(d, "out_bf16")
    os.mkdir(out)
    why = one_line_error(*kiln("run", bf, "--input", "X=" + x, "--out", out, "--out-format=npy"),
                         "bf16, which .npy cannot hold", os.path.join(out, "output_0.npy"))
    report("bad out bf16", why or (("left files behind: %s" % os.listdir(out)) if os.listdir(out) else None))
    # --out-format without --out, and an unknown format
    report("bad out-format alone", one_line_error(*kiln("run", model, "--input", "X=" + x, "--out-format=npy"),
                                                  "--out-format=npy needs --out DIR"))
    report("bad out-format value", one_line_error(*kiln("run", model, "--out-format=json"),
                                                  "--out-format=json: expected pb or npy"))
    report("bad out missing folder", one_line_error(*kiln("run", model, "--out", d + "/nodir"),
                                                    "no such folder"))
    x = os.path.join(d, "x23.npy")
    np.save(x, np.ones((2, 3), np.float32))
    report("bad input twice", one_line_error(*kiln("run", model, "--input", "X=" + x, "--input", "X=" + x),
                                             "--input X: given twice"))


try:
    check_types()
    check_pb_same()
    check_check()
    check_bench()
    check_bad()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
print("%d passed, %d failed" % (results.count(True), results.count(False)))
sys.exit(0 if all(results) else 1)
