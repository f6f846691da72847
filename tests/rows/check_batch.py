#!/usr/bin/env python3
"""check_batch.py KILN MODEL WORK --rows-axis=SPEC [--fill NAME=KIND ...] --counts N,N,..
[--mask-past B,..] [--packs yes|no] [-- COMPILE_ARGS...] — an encoder's batched entry
point (NAME_run_batch, docs/batch.md) against its single-sentence one (NAME_run_rows).

MODEL is compiled once with --rows-axis (plus COMPILE_ARGS). With --packs,
the generated C must say that batches pack (yes: NAME_forward takes a pack,
kiln_nseg) or that they do not (no: the comment "no packs: REASON" above
NAME_run_batch, whose reason is printed). A generated C harness fills one
sentence per count (sentence b has counts[b] tokens; the listed inputs'
elements past it hold other values, 7 + t % 5; a mask:A input is 1 past the
count too for the sentences of --mask-past, which must then run alone:
NAME_run_rows reads an unlisted mask whole), then:
  - runs NAME_run_rows_ws(..., counts[b]) on each sentence alone: the reference;
  - runs NAME_run_batch_ws on all of them, with a workspace full of NaN bytes
    and outputs full of 0x7f bytes, and NAME_run_batch (the static workspace);
  - wants every sentence's outputs bit-identical to its reference (the
    token rows past its count included: they are 0 in both);
  - wants KILN_E_ARG, and every output byte untouched, for batch 0, a NULL
    count array, and a batch with one count of 0 or ROWS + 1 among good ones.
KIND as in check_rows.py (ids:V, mask:A, zero; default: f32 random, i64 0).
Exit 0 when every check holds, 1 otherwise."""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_rows import input_fill, params, run  # noqa: E402


def fill_lines(ps, listed, fills, dirty):
    """C lines that fill sentence b's inputs for count n."""
    c = []
    for const, ct, pn, dims in ps:
        if not const:
            continue
        head, v, _ = input_fill(ct, pn, dims, listed, fills)
        c += head
        if pn in listed:
            v = f"t >= n ? ({ct})(7 + t % 5) : {v}"
        elif fills.get(pn, "").startswith("mask:") and dirty:
            v = f"({ct})(t < n || {' || '.join(f'b == {d}' for d in dirty)})"
        c.append(f"    (({ct} *){pn}[b])[i] = {v};")
        c.append("  }")
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("model")
    ap.add_argument("work")
    ap.add_argument("--rows-axis", required=True)
    ap.add_argument("--fill", action="append", default=[])
    ap.add_argument("--counts", required=True)
    ap.add_argument("--mask-past", default="")
    ap.add_argument("--packs", choices=["yes", "no"])
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    os.makedirs(a.work, exist_ok=True)
    run([a.kiln, "compile", a.model, "--name", "bat", "-o", f"{a.work}/bat.c",
         "--rows-axis=" + a.rows_axis] + argv[cut + 1:])
    listed = {n: int(ax) for n, ax in (item.rsplit(":", 1) for item in a.rows_axis.split(","))}
    fills = dict(f.split("=", 1) for f in a.fill)
    ctext = open(f"{a.work}/bat.c", encoding="utf-8").read()
    m = re.search(r"/\* bat_run_batch: sentence after sentence \(no packs: (.*?)\) \*/", ctext, re.S)
    packs = "kiln_nseg" in ctext
    print("packs: " + ("yes" if packs else "no (" + (" ".join(m.group(1).split()) if m else "?") + ")"))
    if a.packs and (a.packs == "yes") != packs:
        print(f"check_batch: FAIL: expected packs {a.packs}")
        return 1
    ps = params(f"{a.work}/bat.h", "bat")
    blob = "bat_bind_linked_weights" in open(f"{a.work}/bat.h", encoding="utf-8").read()
    counts = [int(x) for x in a.counts.split(",")]
    nb = len(counts)
    outs = [(ct, pn, dims) for const, ct, pn, dims in ps if not const]
    names = [pn for const, ct, pn, dims in ps]
    c = ['#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>', '#include "bat.h"', '',
         'static unsigned long long seed = 88172645463325252ull;',
         'static double rnd(void) { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;'
         ' return (double)(seed >> 11) / 9007199254740992.0; }',
         'static unsigned char ws_buf[BAT_WORKSPACE_SIZE + 64];', f'enum {{ NB = {nb} }};',
         f'static const int counts[NB] = {{{", ".join(map(str, counts))}}};']
    for const, ct, pn, dims in ps:
        d = "".join(f"[{x}]" for x in dims)
        c.append(f"static {ct} {pn}[NB]{d};")
    for ct, pn, dims in outs:
        d = "".join(f"[{x}]" for x in dims)
        c.append(f"static {ct} {pn}_ref[NB]{d}, {pn}_keep[NB]{d};")
    dirty = [int(x) for x in a.mask_past.split(",") if x]
    c += ["", "static void fill(int b, int n) {"] + fill_lines(ps, listed, fills, dirty) + ["}", ""]
    args = ", ".join(names)
    c += ["/* every output byte as the 0x7f fill left it */", "static int untouched(void) {",
          "  int same = 1;"]
    c += [f"  same &= !memcmp({pn}, {pn}_keep, sizeof {pn});" for ct, pn, dims in outs]
    c += ["  return same;", "}", "", "static void poison(void) {",
          "  memset(ws_buf, 0xff, sizeof ws_buf); /* NaN bytes */"]
    c += [f"  memset({pn}, 0x7f, sizeof {pn});" for ct, pn, dims in outs]
    c += ["}", "", "static int compare(const char *what) {", "  int bad = 0;",
          "  for (int b = 0; b < NB; b++) {"]
    cmp = " && ".join(f"!memcmp({pn}[b], {pn}_ref[b], sizeof {pn}[b])" for ct, pn, dims in outs)
    c += [f"    int same = {cmp};",
          '    printf("%s: sentence %d (%d tokens): %s\\n", what, b, counts[b], same ? "bit-identical" : "DIFFERS  FAIL");',
          "    bad |= !same;", "  }", "  return bad;", "}", "", "int main(void) {", "  int bad = 0;",
          "  unsigned char *ws = ws_buf + (64 - (size_t)ws_buf % 64) % 64;"]
    if blob:
        c.append("  if (bat_bind_linked_weights()) return 2;")
    c += ["  for (int b = 0; b < NB; b++) {", "    fill(b, counts[b]);"]
    one = ", ".join(f"{pn}[b]" for pn in names if pn not in [o[1] for o in outs])
    refs = ", ".join(f"{pn}_ref[b]" for ct, pn, dims in outs)
    c += [f"    if (bat_run_rows_ws(ws, {one}, {refs}, counts[b]) != KILN_OK) return 2;", "  }",
          "  poison();", f"  int rc = bat_run_batch_ws(ws, {args}, counts, NB);",
          '  printf("run_batch_ws: rc %d\\n", rc);', "  bad |= rc != KILN_OK || compare(\"run_batch_ws\");",
          "  poison();", f"  rc = bat_run_batch({args}, counts, NB);",
          '  printf("run_batch: rc %d\\n", rc);', "  bad |= rc != KILN_OK || compare(\"run_batch\");",
          "  poison();"]
    c += [f"  memcpy({pn}_keep, {pn}, sizeof {pn});" for ct, pn, dims in outs]
    c += ["  int bad_counts[NB];",
          "  for (int k = 0; k < 5; k++) { /* batch 0, NULL counts, one count 0, one ROWS + 1, batch -1 */",
          "    memcpy(bad_counts, counts, sizeof counts);",
          "    bad_counts[NB - 1] = k == 2 ? 0 : BAT_ROWS + 1;",
          "    const int *cs = k == 1 ? NULL : k >= 2 && k <= 3 ? bad_counts : counts;",
          "    int nb = k == 0 ? 0 : k == 4 ? -1 : NB;",
          f"    int r1 = bat_run_batch_ws(ws, {args}, cs, nb), r2 = bat_run_batch({args}, cs, nb);",
          "    int ok = r1 == KILN_E_ARG && r2 == KILN_E_ARG && untouched();",
          '    printf("bad call %d: rc %d %d (KILN_E_ARG %d), outputs %s%s\\n", k, r1, r2, KILN_E_ARG,'
          ' untouched() ? "untouched" : "WRITTEN", ok ? "" : "  FAIL");',
          "    bad |= !ok;", "  }",
          '  printf("%s\\n", bad ? "check_batch: FAIL" : "check_batch: ok");', "  return bad;", "}", ""]
    open(f"{a.work}/harness.c", "w", encoding="utf-8").write("\n".join(c))
    cc = os.environ.get("CC", "cc")
    flags = os.environ.get("KILN_APP_CFLAGS", "").split()
    srcs = [f"{a.work}/harness.c", f"{a.work}/bat.c"]
    if os.path.exists(f"{a.work}/bat_weights.S"):
        srcs.append(f"{a.work}/bat_weights.S")
    run([cc, "-std=c99", "-O2", "-march=native", "-ffp-contract=fast", "-Wall", "-Wextra", "-Werror", "-I", a.work,
         "-o", f"{a.work}/harness"] + flags + srcs + ["-lm"], cwd=a.work)
    r = subprocess.run([f"{a.work}/harness"], capture_output=True, text=True, cwd=a.work)
    print(r.stdout, end="")
    print(r.stderr, end="", file=sys.stderr)
    return 0 if r.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
