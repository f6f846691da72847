#!/usr/bin/python3
"""make_files.py OUTDIR — write the .safetensors test corpus for
tests/safetensors/test_safetensors.c (and the fuzzer's seeds).

Good files exercise every dtype kiln reads (F16 and BF16 with values whose
f32 conversion is known: subnormals, infinities, NaN, -0), a rank-0 tensor,
empty tensors, metadata, offsets out of header order and unaligned. Bad
files break one rule of the format each. Everything is written with the
standard library (struct + json), independently of kiln's writer, and
OUTDIR/cases.txt tells the C test what to expect, one tab-separated line
per item:

  good FILE NTENSORS NMETA
  tensor NAME KILN_DTYPE FILE_DTYPE DIMS(comma-separated) VALUES(space-separated)
  meta KEY VALUE
  bad FILE SUBSTRING-OF-THE-ERROR

Float values are written with float.hex() so the C side reads them exactly.
"""
import json
import math
import os
import struct
import sys

# format dtype -> (struct code, kiln dtype after loading)
DTYPES = {
    "F64": ("d", "f64"), "F32": ("f", "f32"), "F16": ("e", "f32"), "BF16": (None, "f32"),
    "I64": ("q", "i64"), "I32": ("i", "i32"), "I16": ("h", "i16"), "I8": ("b", "i8"),
    "U64": ("Q", "u64"), "U32": ("I", "u32"), "U16": ("H", "u16"), "U8": ("B", "u8"),
    "BOOL": ("B", "bool"),
}


def bf16_bits(x):
    """The bf16 bit pattern of x (x must be exactly representable)."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    assert bits & 0xFFFF == 0 or math.isnan(x), x
    return bits >> 16


def bf16_value(h):
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def encode(dtype, values):
    if dtype == "BF16":
        return b"".join(struct.pack("<H", h) for h in values)
    code = DTYPES[dtype][0]
    return struct.pack("<%d%s" % (len(values), code), *values)


def decoded(dtype, values):
    """What kiln should hold after loading: the values as the file stores
    them (f32 rounding applied), halves widened to f32."""
    if dtype == "BF16":
        return [bf16_value(h) for h in values]
    code = DTYPES[dtype][0]
    return list(struct.unpack("<%d%s" % (len(values), code), encode(dtype, values)))


def text(value):
    if isinstance(value, float):
        return value.hex() if math.isfinite(value) else repr(value)
    return str(int(value))


class Corpus:
    def __init__(self, outdir):
        self.outdir = outdir
        self.lines = []

    def write(self, name, header_bytes, data, pad_to=1):
        """The file as the format lays it out: u64 length, header, data."""
        header_bytes += b" " * (-len(header_bytes) % pad_to)
        with open(os.path.join(self.outdir, name), "wb") as f:
            f.write(struct.pack("<Q", len(header_bytes)) + header_bytes + data)

    def good(self, name, tensors, metadata=None, data_order=None, pad_to=8):
        """tensors: [(name, dtype, shape, values)]; data_order: tensor
        indices in the order their bytes lie in the data area."""
        order = data_order if data_order is not None else range(len(tensors))
        header, data = {}, b""
        if metadata is not None:
            header["__metadata__"] = metadata
        offsets = {}
        for i in order:
            blob = encode(tensors[i][1], tensors[i][3])
            offsets[i] = [len(data), len(data) + len(blob)]
            data += blob
        for i, (tname, dtype, shape, values) in enumerate(tensors):
            assert math.prod(shape) == len(values), tname
            header[tname] = {"dtype": dtype, "shape": shape, "data_offsets": offsets[i]}
        self.write(name, json.dumps(header, ensure_ascii=False).encode(), data, pad_to)
        self.lines.append("good\t%s\t%d\t%d" % (name, len(tensors), len(metadata or {})))
        for tname, dtype, shape, values in tensors:
            self.lines.append("tensor\t%s\t%s\t%s\t%s\t%s" % (
                tname, DTYPES[dtype][1], dtype, ",".join(map(str, shape)),
                " ".join(text(v) for v in decoded(dtype, values))))
        for key, value in (metadata or {}).items():
            self.lines.append("meta\t%s\t%s" % (key, value))

    def bad(self, name, expect, header, data=b"", raw=None):
        """header: a dict (dumped as JSON) or str (written as is)."""
        if raw is not None:
            with open(os.path.join(self.outdir, name), "wb") as f:
                f.write(raw)
        else:
            h = header if isinstance(header, (str, bytes)) else json.dumps(header)
            self.write(name, h.encode() if isinstance(h, str) else h, data)
        self.lines.append("bad\t%s\t%s" % (name, expect))


def t(dtype, shape, begin, end=None):
    """A header entry; end defaults to what the shape needs."""
    size = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2,
            "BF16": 2, "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1}.get(dtype, 4)
    return {"dtype": dtype, "shape": shape,
            "data_offsets": [begin, begin + size * math.prod(shape) if end is None else end]}


def good_files(c):
    c.good("dtypes.safetensors", [
        ("bytes", "U8", [3], [0, 7, 255]),  # 3 bytes first: every later offset is unaligned
        ("weight", "F32", [2, 3], [1.5, -2.25, 0.1, 3e38, -1e-40, 0.0]),
        ("f64", "F64", [2], [math.pi, -1e-300]),
        ("i64", "I64", [3], [-2**63, 2**63 - 1, -5]),
        ("i32", "I32", [2], [-2**31, 2**31 - 1]),
        ("i16", "I16", [2], [-32768, 1234]),
        ("i8", "I8", [3], [-128, 0, 127]),
        ("u64", "U64", [2], [2**64 - 1, 42]),
        ("u32", "U32", [1], [4000000000]),
        ("u16", "U16", [2], [65535, 1]),
        ("mask", "BOOL", [2, 2], [1, 0, 0, 1]),
    ], metadata={"format": "pt", "note": "written by make_files.py, ünïcode"})

    f16 = [1.0, -2.5, 65504.0, 2.0**-24, 1023 * 2.0**-24, 2.0**-14, -0.0,
           math.inf, -math.inf, math.nan, 0.333251953125, -1.0009765625]
    bf16 = [bf16_bits(x) for x in [1.0, -3.140625, 3.3895313892515355e38, -0.0, math.inf]]
    bf16 += [0x0001, 0x7FC0, 0x8080]  # smallest subnormal, NaN, -2^-126
    c.good("halves.safetensors", [
        ("h", "F16", [3, 4], f16),
        ("b", "BF16", [8], bf16),
        ("h_odd", "F16", [1], [0.5]),
    ], data_order=[2, 0, 1])  # data not in header order; a 2-byte tensor first

    c.good("shapes.safetensors", [
        ("encoder.layers.0.wé", "F32", [], [2.5]),   # rank 0
        ("empty", "F32", [0], []),
        ("empty3", "I64", [2, 0, 3], []),
        ("rank8", "I8", [1, 2, 1, 1, 1, 1, 1, 2], [1, 2, 3, 4]),
        ("last", "F32", [1], [-7.0]),
    ], pad_to=64)  # trailing spaces in the header, as writers pad it

    c.good("nothing.safetensors", [])
    c.good("only_metadata.safetensors", [], metadata={"a": "1", "": "empty key"})


def bad_files(c):
    w = t("F32", [2], 0)  # a valid entry: 8 bytes
    d8 = b"\0" * 8
    c.bad("short.safetensors", "the file is 5 bytes; expected at least 8", None, raw=b"\x02\0\0\0\0")
    c.bad("empty_file.safetensors", "the file is 0 bytes", None, raw=b"")
    c.bad("huge_header.safetensors", "header length 1099511627776; expected at most 100000000 bytes",
          None, raw=struct.pack("<Q", 2**40) + b"{}")
    c.bad("header_past_end.safetensors", "header length 100 is more than the 2 bytes after it",
          None, raw=struct.pack("<Q", 100) + b"{}")
    c.bad("nul_in_header.safetensors", "the header holds a NUL byte at offset 7 of its 10; expected JSON text",
          None, raw=struct.pack("<Q", 10) + b'{"a": 1\0 }')
    c.bad("zero_header.safetensors", "the header is not valid JSON", None,
          raw=struct.pack("<Q", 0))
    c.bad("syntax.safetensors", "the header is not valid JSON: ",
          '{"w": {"dtype": "F32",}}')
    c.bad("syntax_line3.safetensors", "at line 3, column",
          '{\n "w": {"dtype": "F32", "shape": [2],\n  "data_offsets": [0, 8}\n}', d8)
    c.bad("bad_utf8.safetensors", "the header is not valid JSON",
          b'{"w\xff": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', d8)
    c.bad("trailing_junk.safetensors", "the header is not valid JSON",
          '{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}} x', d8)
    c.bad("top_array.safetensors", "the header is an array; expected a JSON object of tensors",
          [w])
    c.bad("top_number.safetensors", "the header is 7; expected a JSON object", "7")
    c.bad("entry_number.safetensors", "tensor 'w': is 5; expected an object with", {"w": 5})
    for field in ("dtype", "shape", "data_offsets"):
        entry = dict(w)
        del entry[field]
        c.bad("no_%s.safetensors" % field, "tensor 'w': has no \"%s\"" % field, {"w": entry}, d8)
    c.bad("extra_field.safetensors", "tensor 'w': unknown field 'stride'",
          {"w": dict(w, stride=[1])}, d8)
    c.bad("dtype_number.safetensors", "tensor 'w': \"dtype\" is 1; expected a string",
          {"w": dict(w, dtype=1)}, d8)
    c.bad("dtype_unknown.safetensors", "tensor 'w': dtype 'F8_E4M3' is not supported; expected F64",
          {"w": t("F8_E4M3", [2], 0, 2)}, d8[:2])
    c.bad("dtype_lowercase.safetensors", "tensor 'w': dtype 'f32' is not supported",
          {"w": dict(w, dtype="f32")}, d8)
    c.bad("shape_string.safetensors", "tensor 'w': \"shape\" is a string; expected an array",
          {"w": dict(w, shape="2")}, d8)
    c.bad("shape_negative.safetensors", "tensor 'w': shape[1] is -3; expected a non-negative integer",
          {"w": dict(w, shape=[2, -3])}, d8)
    c.bad("shape_real.safetensors", "tensor 'w': shape[0] is 2.5; expected a non-negative integer",
          {"w": dict(w, shape=[2.5])}, d8)
    c.bad("shape_overflow.safetensors", "tensor 'w': shape [4294967296,4294967296,4294967296] has more than",
          {"w": dict(w, shape=[2**32] * 3)}, d8)
    c.bad("shape_int64_overflow.safetensors", "tensor 'w': shape [9223372036854775807,2] has more than",
          {"w": dict(w, shape=[2**63 - 1, 2])}, d8)
    c.bad("shape_too_big_integer.safetensors", "the header is not valid JSON: too big integer",
          {"w": dict(w, shape=[2**64])}, d8)
    c.bad("shape_exponent.safetensors", "tensor 'w': shape[0] is 2.0; expected a non-negative integer",
          '{"w": {"dtype": "F32", "shape": [2e0], "data_offsets": [0, 8]}}', d8)
    c.bad("rank9.safetensors", "tensor 'w': shape has rank 9; expected at most 8",
          {"w": dict(w, shape=[1] * 9)}, d8)
    c.bad("offsets_one.safetensors", "tensor 'w': \"data_offsets\" is an array of other than 2 items",
          {"w": dict(w, data_offsets=[0])}, d8)
    c.bad("offsets_object.safetensors", "tensor 'w': \"data_offsets\" is an object; expected [begin, end]",
          {"w": dict(w, data_offsets={"begin": 0})}, d8)
    c.bad("offsets_negative.safetensors", "tensor 'w': data_offsets[0] is -1",
          {"w": dict(w, data_offsets=[-1, 7])}, d8)
    c.bad("offsets_reversed.safetensors", "tensor 'w': data_offsets [8, 0] end before they begin",
          {"w": dict(w, data_offsets=[8, 0])}, d8)
    c.bad("offsets_past_end.safetensors",
          "tensor 'w': data_offsets [0, 400] go past the end of the data area (8 bytes)",
          {"w": dict(w, data_offsets=[0, 400])}, d8)
    c.bad("size_mismatch.safetensors", "tensor 'w': data_offsets [0, 8] hold 8 bytes; expected 12 (F32 [3])",
          {"w": t("F32", [3], 0, 8)}, d8)
    c.bad("half_size_mismatch.safetensors", "tensor 'h': data_offsets [0, 8] hold 8 bytes; expected 4 (F16 [2])",
          {"h": t("F16", [2], 0, 8)}, d8)
    c.bad("overlap.safetensors", "tensor 'b': data_offsets [4, 12] overlap those of tensor 'a', [0, 8]",
          {"a": t("F32", [2], 0), "b": t("F32", [2], 4)}, d8 + d8[:4])
    c.bad("same_range.safetensors", "overlap those of tensor 'a', [0, 8]",
          {"a": t("F32", [2], 0), "b": t("F32", [2], 0)}, d8)
    c.bad("empty_inside.safetensors", "tensor 'e': data_offsets [4, 4] overlap those of tensor 'a', [0, 8]",
          {"a": t("F32", [2], 0), "e": t("F32", [0], 4)}, d8)
    c.bad("hole.safetensors", "tensor 'b': data_offsets [8, 12] leave bytes [4, 8) of the data area to no tensor",
          {"a": t("F32", [1], 0), "b": t("F32", [1], 8)}, d8 + d8[:4])
    c.bad("hole_at_start.safetensors", "tensor 'a': data_offsets [4, 8] leave bytes [0, 4)",
          {"a": t("F32", [1], 4)}, d8)
    c.bad("trailing_data.safetensors", "the data area has 4 bytes after the last tensor's end (8)",
          {"w": w}, d8 + b"\1\2\3\4")
    c.bad("no_tensors_data.safetensors", "the data area has 8 bytes after the last tensor's end (0)",
          {}, d8)
    dup = '{"w": %s, "w": %s}' % (json.dumps(w), json.dumps(w))
    c.bad("duplicate.safetensors", "the header names 'w' twice in one object (line 1, column", dup, d8)
    dup_esc = '{"a\\"b": %s, "a\\"b": %s}' % (json.dumps(w), json.dumps(w))
    c.bad("duplicate_escaped.safetensors", "the header names 'a\"b' twice", dup_esc, d8)
    c.bad("duplicate_field.safetensors", "the header names 'dtype' twice",
          '{"w": {"dtype": "F32", "dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', d8)
    c.bad("metadata_array.safetensors", "\"__metadata__\" is an array; expected an object of strings",
          {"__metadata__": ["a"], "w": w}, d8)
    c.bad("metadata_number.safetensors", "\"__metadata__\" entry 'epoch' is 3; expected a string",
          {"__metadata__": {"epoch": 3}, "w": w}, d8)
    c.bad("bool_value.safetensors", "tensor 'm': BOOL element 1 is 2; expected 0 or 1",
          {"m": t("BOOL", [3], 0)}, b"\1\2\0")


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    c = Corpus(outdir)
    good_files(c)
    bad_files(c)
    with open(os.path.join(outdir, "cases.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(c.lines) + "\n")


if __name__ == "__main__":
    main()
