#!/usr/bin/env python3
"""check_rows.py KILN MODEL WORK --rows-axis=SPEC [--fill NAME=KIND ...] [--counts N,N,..]
[-- COMPILE_ARGS...] — an encoder's run-time token count (--rows-axis, docs/rows.md)
against the same model compiled without it.

MODEL is compiled twice (kiln compile, plus COMPILE_ARGS): `plain` and, with
--rows-axis, `rows`. A generated C harness then, for each count n:
  - runs plain_run on inputs whose token positions from n on are padding
    (ids 0, mask 0) and rows_run_rows_ws(..., n) on the same inputs with
    other values there (the count must hide them) and a workspace full of
    NaN bytes (nothing past the count may leak into the live rows);
  - wants the live rows of every output (all of an output without a token
    axis) bit-identical, or within --rtol (relative to the output's largest
    magnitude), and every output's token rows from n on exactly 0;
and checks that counts 0 and ROWS + 1 return KILN_E_ARG. An output's token
axis is its first dim equal to ROWS after dims of 1.
KIND, per input (default: f32 inputs random in [-1, 1], i64 inputs 0):
  ids:V     token ids in [1, V), padding 0
  mask:A    1 before the count, 0 from it on, along axis A
  zero      all 0
Exit 0 when every check holds, 1 otherwise."""
import argparse
import os
import re
import subprocess
import sys


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"check_rows: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def prod(dims):
    n = 1
    for x in dims:
        n *= x
    return n


def input_fill(ct, pn, dims, listed, fills):
    """One input's fill for count n, as C: the loop head over its elements
    (t: element i's token position, 0 without a token axis), the C value of
    element i by its KIND (above), and its token axis (-1 none)."""
    kind = fills.get(pn, "rand" if ct == "float" else "zero")
    ax = int(kind.split(":")[1]) if kind.startswith("mask:") else listed.get(pn, -1)
    inner = prod(dims[ax + 1:]) if ax >= 0 else 1
    sdim = dims[ax] if ax >= 0 else 1
    head = [f"  for (long i = 0; i < {prod(dims)}; i++) {{",
            f"    long t = {'(i / %d) %% %d' % (inner, sdim) if ax >= 0 else '0'}; (void)t;"]
    if kind.startswith("ids:"):
        value = f"({ct})(1 + (long)(rnd() * ({int(kind[4:])} - 1)))"
    elif kind.startswith("mask:"):
        value = f"({ct})(t < n)"
    elif kind == "zero":
        value = f"({ct})0"
    else:
        value = f"({ct})(2 * rnd() - 1)"
    return head, value, ax


def params(header, name):
    """The parameters of NAME_run_rows: [(const, ctype, pname, dims)], the count last."""
    text = open(header, encoding="utf-8").read()
    m = re.search(r"int %s_run_rows\((.*?)\);" % name, text, re.S)
    if not m:
        sys.exit(f"check_rows: {header}: no {name}_run_rows prototype")
    out = []
    for p in m.group(1).split(","):
        p = " ".join(p.split())
        if p == "int rows":
            continue
        pm = re.fullmatch(r"(const )?(\w+) (\w+)((?:\[\d+\])+)", p)
        if not pm:
            sys.exit(f"check_rows: cannot read parameter '{p}'")
        dims = [int(d) for d in re.findall(r"\[(\d+)\]", pm.group(4))]
        out.append((bool(pm.group(1)), pm.group(2), pm.group(3), dims))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("model")
    ap.add_argument("work")
    ap.add_argument("--rows-axis", required=True)
    ap.add_argument("--fill", action="append", default=[])
    ap.add_argument("--counts", default="1,2,5,16,17")
    ap.add_argument("--rtol", type=float, default=0.0)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    extra = argv[cut + 1:]
    os.makedirs(a.work, exist_ok=True)
    for name, more in (("plain", []), ("rows", ["--rows-axis=" + a.rows_axis])):
        run([a.kiln, "compile", a.model, "--name", name, "-o", f"{a.work}/{name}.c"] + extra + more)
    listed = {}
    for item in a.rows_axis.split(","):
        n, ax = item.rsplit(":", 1)
        listed[n] = int(ax)
    fills = dict(f.split("=", 1) for f in a.fill)
    ps = params(f"{a.work}/rows.h", "rows")
    text = open(f"{a.work}/rows.h", encoding="utf-8").read()
    smax = int(re.search(r"#define ROWS_ROWS (\d+)", text).group(1))
    blob = "rows_bind_linked_weights" in text
    c = ['#include <math.h>', '#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>',
         '#include "plain.h"', '#include "rows.h"', '',
         'static unsigned long long seed = 88172645463325252ull;',
         'static double rnd(void) { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;'
         ' return (double)(seed >> 11) / 9007199254740992.0; }',
         f'static unsigned char ws[ROWS_WORKSPACE_SIZE + 64];', '']
    for const, ct, pn, dims in ps:
        d = "".join(f"[{x}]" for x in dims)
        c.append(f"static {ct} {pn}_a{d}, {pn}_b{d};")
    c += ["", "static int check(int n) {", "  int bad = 0;"]
    for const, ct, pn, dims in ps:
        if not const:
            continue
        head, value, ax = input_fill(ct, pn, dims, listed, fills)
        c += head
        c.append(f"    {ct} v = {value};")
        c.append(f"    ((({ct} *){pn}_a))[i] = v;")
        c.append(f"    ((({ct} *){pn}_b))[i] = v;")
        if ax >= 0 and pn in listed:
            c.append(f"    if (t >= n) {{ (({ct} *){pn}_a)[i] = 0; (({ct} *){pn}_b)[i] = ({ct})(7 + t % 5); }}")
        c.append("  }")
    ins = [pn for const, ct, pn, dims in ps if const]
    outs = [(ct, pn, dims) for const, ct, pn, dims in ps if not const]
    args_a = ", ".join(f"{p}_a" for p in ins + [o[1] for o in outs])
    args_b = ", ".join(f"{p}_b" for p in ins + [o[1] for o in outs])
    c.append(f"  plain_run({args_a});")
    c.append("  memset(ws, 0xff, sizeof ws); /* NaN bytes: nothing past the count may leak */")
    for ct, pn, dims in outs:
        c.append(f"  memset({pn}_b, 0x7f, sizeof {pn}_b);")
    c.append(f"  int rc = rows_run_rows_ws(ws + (64 - (size_t)ws % 64) % 64, {args_b}, n);")
    c.append('  if (rc != 0) { printf("count %d: rc %d\\n", n, rc); return 1; }')
    for ct, pn, dims in outs:
        total = 1
        for x in dims:
            total *= x
        ax = next((i for i, x in enumerate(dims) if x == smax and all(y == 1 for y in dims[:i])), -1)
        inner = 1
        for x in dims[ax + 1:] if ax >= 0 else []:
            inner *= x
        c.append("  {")
        c.append(f"    double big = 0, err = 0; long past = 0, nonfin = 0;")
        c.append(f"    for (long i = 0; i < {total}; i++) {{")
        c.append(f"      long t = {'(i / %d) %% %d' % (inner, smax) if ax >= 0 else '0'};")
        c.append(f"      double x = ((const {ct} *){pn}_a)[i], y = ((const {ct} *){pn}_b)[i];")
        c.append("      if (t >= n) { past += y != 0; continue; }")
        c.append("      nonfin += !isfinite(y);")
        c.append("      big = fabs(x) > big ? fabs(x) : big;")
        c.append("      err = fabs(x - y) > err ? fabs(x - y) : err;")
        c.append("    }")
        c.append(f"    int ok = !nonfin && !past && err <= {a.rtol!r} * big;")
        c.append(f'    printf("count %d: {pn}: max |diff| %.3g (largest |x| %.3g), %ld non-finite, '
                 f'%ld nonzero past the count%s\\n", n, err, big, nonfin, past, ok ? "" : "  FAIL");')
        c.append("    bad |= !ok;")
        c.append("  }")
    c += ["  return bad;", "}", "", "int main(void) {"]
    if blob:
        c.append("  if (plain_bind_linked_weights() || rows_bind_linked_weights()) return 2;")
    c.append("  int bad = 0;")
    for n in a.counts.split(","):
        if int(n) <= smax:
            c.append(f"  bad |= check({int(n)});")
    c.append(f"  bad |= check(ROWS_ROWS);")
    c.append(f"  int r0 = rows_run_rows({args_b}, 0), r1 = rows_run_rows({args_b}, ROWS_ROWS + 1);")
    c.append('  printf("counts 0 and ROWS + 1: %d %d (KILN_E_ARG %d)\\n", r0, r1, KILN_E_ARG);')
    c.append("  bad |= r0 != KILN_E_ARG || r1 != KILN_E_ARG;")
    c += ['  printf("%s\\n", bad ? "check_rows: FAIL" : "check_rows: ok");', "  return bad;", "}", ""]
    open(f"{a.work}/harness.c", "w", encoding="utf-8").write("\n".join(c))
    cc = os.environ.get("CC", "cc")
    flags = os.environ.get("KILN_APP_CFLAGS", "").split()
    srcs = [f"{a.work}/harness.c", f"{a.work}/plain.c", f"{a.work}/rows.c"]
    srcs += [f"{a.work}/{n}_weights.S" for n in ("plain", "rows") if os.path.exists(f"{a.work}/{n}_weights.S")]
    run([cc, "-std=c99", "-O2", "-march=native", "-ffp-contract=fast", "-Wall", "-Wextra", "-Werror", "-I", a.work,
         "-o", f"{a.work}/harness"] + flags + srcs + ["-lm"], cwd=a.work)
    r = subprocess.run([f"{a.work}/harness"], capture_output=True, text=True, cwd=a.work)
    print(r.stdout, end="")
    print(r.stderr, end="", file=sys.stderr)
    return 0 if r.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
