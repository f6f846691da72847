#!/usr/bin/env python3
"""make_bad.py GOOD.gguf OUT_DIR — bad GGUF files for kiln's reader, made
from the good fixture (tests/gguf/tiny_llama.gguf) with Python's struct
alone (no kiln code, no gguf package), plus a few small files written from
scratch for what the fixture lacks (general.alignment, deep nesting).

Writes OUT_DIR/NAME.gguf for each case and OUT_DIR/cases.txt, one line per
case: NAME<TAB>text kiln's one-line error must contain. run_bad.sh runs
them; the fuzzer takes them as seeds."""
import os
import struct
import sys

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Layout:
    """Where things are in a GGUF file: offsets of header fields, each
    entry's key/type/value, each tensor info's fields."""

    def __init__(self, b):
        self.b = b
        self.at = 24
        self.kv = {}      # key -> (key_len_pos, type_pos, value_pos)
        self.tensors = []  # dicts: name, name_pos, ndims_pos, dims_pos, type_pos, offset_pos
        n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)
        for _ in range(n_kv):
            kpos = self.at
            key = self.string()
            tpos = self.at
            (t,) = self.u32()
            vpos = self.at
            self.value(t)
            self.kv[key] = (kpos, tpos, vpos)
        for _ in range(n_tensors):
            t = {"name_pos": self.at}
            t["name"] = self.string()
            t["ndims_pos"] = self.at
            (nd,) = self.u32()
            t["dims_pos"] = self.at
            self.at += 8 * nd
            t["type_pos"] = self.at
            self.at += 4
            t["offset_pos"] = self.at
            (t["offset"],) = struct.unpack_from("<Q", b, self.at)
            self.at += 8
            self.tensors.append(t)
        self.infos_end = self.at
        self.data_start = (self.at + 31) // 32 * 32

    def u32(self):
        v = struct.unpack_from("<I", self.b, self.at)
        self.at += 4
        return v

    def string(self):
        (n,) = struct.unpack_from("<Q", self.b, self.at)
        s = self.b[self.at + 8:self.at + 8 + n].decode()
        self.at += 8 + n
        return s

    def value(self, t):
        if t == 8:
            self.string()
        elif t == 9:
            (et,) = self.u32()
            (n,) = struct.unpack_from("<Q", self.b, self.at)
            self.at += 8
            for _ in range(n):
                self.value(et)
        else:
            self.at += SCALAR[t]


def put(b, pos, fmt, *v):
    b = bytearray(b)
    struct.pack_into(fmt, b, pos, *v)
    return bytes(b)


def gguf_string(s):
    s = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(s)) + s


def scratch(kvs, tensors, data=b"", align=32):
    """A GGUF file from parts: kvs = [(key, type, packed value)], tensors =
    [(name, dims, ggml type, offset)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, t, v in kvs:
        out += gguf_string(key) + struct.pack("<I", t) + v
    for name, dims, t, off in tensors:
        out += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(
            struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", t, off)
    out += b"\0" * (-len(out) % align)
    return out + data


def main():
    good_path, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    good = open(good_path, "rb").read()
    L = Layout(good)
    t0, t1, t2 = L.tensors[0], L.tensors[1], L.tensors[2]
    tokens = L.kv["tokenizer.ggml.tokens"]
    q = next(t for t in L.tensors if t["name"] == "blk.0.attn_q.weight")
    k = next(t for t in L.tensors if t["name"] == "blk.0.attn_k.weight")
    last = max(L.tensors, key=lambda t: t["offset"])
    cases = {
        "empty": (b"", "expected the GGUF magic"),
        "truncated_header": (good[:14], "the file ends inside the header"),
        "truncated_kv_count": (good[:tokens[2] + 100], "key 'tokenizer.ggml.tokens': array of 256 string items cannot fit"),
        "truncated_kv": (good[:tokens[2] + 12 + 2300], "key 'tokenizer.ggml.tokens': "),
        "truncated_infos": (good[:L.tensors[-1]["dims_pos"] + 3], "tensor 'output.weight': the file ends inside the dimensions"),
        "truncated_data": (good[:len(good) - 100], "go past its end"),
        "bad_magic": (b"GGUX" + good[4:], "the file starts with bytes 47 47 55 58; expected the GGUF magic"),
        "version_1": (put(good, 4, "<I", 1), "GGUF version 1"),
        "version_4": (put(good, 4, "<I", 4), "GGUF version 4; kiln reads versions 2 and 3"),
        "big_endian": (put(good, 4, ">I", 3), "(a big-endian file?)"),
        "huge_tensor_count": (put(good, 8, "<Q", 1 << 62), "tensor_count 4611686018427387904 cannot fit"),
        "huge_kv_count": (put(good, 16, "<Q", (1 << 64) - 1), "kv_count 18446744073709551615 cannot fit"),
        "key_length_past_end": (put(good, 24, "<Q", 1 << 40), "the key of entry 0 has length 1099511627776, past the end of the file"),
        "string_past_end": (put(good, L.kv["general.architecture"][2], "<Q", 1 << 50), "key 'general.architecture': the string value has length"),
        "token_past_end": (put(good, tokens[2] + 12, "<Q", len(good)), "key 'tokenizer.ggml.tokens': an array's string has length"),
        "huge_array": (put(good, tokens[2] + 4, "<Q", 1 << 60), "array of 1152921504606846976 string items cannot fit"),
        "unknown_kv_type": (put(good, L.kv["general.architecture"][1], "<I", 13), "key 'general.architecture': value type 13 is unknown"),
        "unknown_array_type": (put(good, tokens[2], "<I", 99), "array item type 99 is unknown"),
        "bad_bool": (put(good, L.kv["tokenizer.ggml.add_bos_token"][2], "<B", 2), "bool value 2; expected 0 or 1"),
        "duplicate_key": (good[:L.kv["kiln.test.i16"][0] + 8] + b"kiln.test.u16" + good[L.kv["kiln.test.i16"][0] + 21:],
                          "key 'kiln.test.u16' appears twice"),
        "key_control_char": (put(good, L.kv["general.architecture"][0] + 8, "<B", 10), "is not printable ASCII"),
        "n_dims_5": (put(good, t1["ndims_pos"], "<I", 5), "tensor 'blk.0.attn_norm.weight': n_dims 5; expected at most 4"),
        "ne_huge": (put(good, t1["dims_pos"], "<Q", 1 << 40), "tensor 'blk.0.attn_norm.weight': ne[0] is 1099511627776"),
        "ne_product_huge": (put(put(good, t0["dims_pos"], "<Q", 1 << 30), t0["dims_pos"] + 8, "<Q", 1 << 30),
                            "tensor 'token_embd.weight': ne [1073741824,1073741824] has more than"),
        "ne_not_block_multiple": (put(good, q["dims_pos"], "<Q", 48), "tensor 'blk.0.attn_q.weight': ne [48,64]: Q4_1 stores blocks of 32"),
        "unknown_ggml_type": (put(good, t1["type_pos"], "<I", 99), "tensor 'blk.0.attn_norm.weight': ggml type 99 is unknown"),
        "duplicate_name": (good[:k["name_pos"] + 8] + q["name"].encode() + good[k["name_pos"] + 8 + len(q["name"]):],
                           "tensor 'blk.0.attn_q.weight' appears twice"),
        "offset_past_end": (put(good, last["offset_pos"], "<Q", 1 << 40), "go past its end"),
        "offset_wraps": (put(good, last["offset_pos"], "<Q", (1 << 64) - 32), "go past its end"),
        "offset_misaligned": (put(good, t2["offset_pos"], "<Q", t2["offset"] + 4), "is not a multiple of the alignment 32"),
        "overlap": (put(good, t2["offset_pos"], "<Q", t0["offset"]), "overlap those of tensor"),
        "alignment_zero": (scratch([("general.alignment", 4, struct.pack("<I", 0))], []),
                           "key 'general.alignment': is 0; expected a power of two"),
        "alignment_3": (scratch([("general.alignment", 4, struct.pack("<I", 3))], []), "is 3; expected a power of two"),
        "alignment_u64": (scratch([("general.alignment", 10, struct.pack("<Q", 32))], []), "is a u64; expected a u32"),
        "nested_too_deep": (scratch([("x.deep", 9, struct.pack("<IQ", 9, 1) * 9 + struct.pack("<IQ", 0, 0))], []),
                            "arrays nested 9 deep; expected at most 8"),
        "empty_name": (scratch([], [("", [32], 0, 0)], b"\0" * 128), "the name of tensor 0 is empty"),
        "name_not_utf8": (scratch([], [(b"w\xff", [32], 0, 0)], b"\0" * 128), "not clean UTF-8"),
    }
    with open(os.path.join(out, "cases.txt"), "w") as f:
        for name, (data, want) in sorted(cases.items()):
            with open(os.path.join(out, name + ".gguf"), "wb") as g:
                g.write(data)
            f.write(f"{name}\t{want}\n")


if __name__ == "__main__":
    main()
