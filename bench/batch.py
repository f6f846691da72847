#!/usr/bin/env python3
"""batch.py KILN STATIC.onnx DYNAMIC.onnx WORK [--rounds N] — batched embedding
throughput (issue 24 item 3): the real all-MiniLM-L6-v2 on 32 sentences of
mixed length (8-64 tokens), kiln's NAME_run_batch against ONNX Runtime's best
batch, both on 1 thread. Run it with a python that has onnxruntime and numpy
(bench/batch.sh passes the venv's).

The sentences: lengths drawn uniformly from 8..64 by numpy's default_rng(24)
([CLS] and [SEP] included), ids between them from the same generator in
[1000, 30000), attention_mask 1 over each sentence, token types 0.

kiln: STATIC.onnx (tools/minilm.py's [1,128] file) compiled with
--rows-axis=input_ids:1,token_type_ids:1, once in f32 and once with
--precision=bf16; a C harness (built -O2 -march=native -ffp-contract=fast)
calls NAME_run_batch on all 32 once to warm up, then times 3 calls.
ORT: DYNAMIC.onnx (bench/minilm_dynamic.py: batch and sequence symbolic),
intra- and inter-op threads 1, the 32 sentences in order in batches of
1, 2, 4, 8, 16 and 32, each batch padded to its longest sentence (mask 0
there); one timed pass per batch size after a warm-up pass.

Then issue 24's first target, one sentence of SHORT = 16 tokens (the first
sentence's ids, cut to 16 with [SEP] last), 1 thread: kiln's f32 seq-128
build above calling minilm_run_rows(..., 16); a seq-16 build (DYNAMIC.onnx
compiled with --shape batch=1 --shape sequence=16) calling its run; ORT on
DYNAMIC.onnx at [1, 16]. Each times SINGLE_RUNS calls after a warm-up; a
round's figure is its best call's CPU time.

Rounds alternate the engines (kiln f32, kiln bf16, ORT at every batch
size, then the three single-sentence ones) so that load on a shared machine
falls on all of them; each figure is the median over rounds of the round's
best, in CPU time of the process (wall time beside it). Agreement: each
kiln build's sentence_embedding against ORT's (batch 1): max abs difference
and the lowest cosine. Prints two markdown tables; exit 1 if an engine fails
or f32 disagrees by more than 1e-4."""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

SENTENCES, LO, HI, SEED = 32, 8, 64, 24
BATCHES = (1, 2, 4, 8, 16, 32)
SHORT, SINGLE_RUNS = 16, 50


def sentences():
    rng = np.random.default_rng(SEED)
    lens = rng.integers(LO, HI + 1, size=SENTENCES)
    return [np.concatenate([[101], rng.integers(1000, 30000, size=n - 2), [102]]).astype(np.int64) for n in lens]


HARNESS = r"""
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "minilm.h"
#include "data.h"
static int64_t ids[NS][1][MINILM_ROWS], mask[NS][1][MINILM_ROWS], types[NS][1][MINILM_ROWS];
static float hidden[NS][1][MINILM_ROWS][384], emb[NS][1][384];
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(void) {
  if (minilm_bind_linked_weights() != KILN_OK) return 2;
  for (int b = 0, at = 0; b < NS; at += lens[b], b++)
    for (int t = 0; t < lens[b]; t++) { ids[b][0][t] = tokens[at + t]; mask[b][0][t] = 1; }
  for (int r = 0; r < 4; r++) {
    double w = now(CLOCK_MONOTONIC), c = now(CLOCK_PROCESS_CPUTIME_ID);
    if (minilm_run_batch(ids, mask, types, hidden, emb, lens, NS) != KILN_OK) return 3;
    if (r) printf("%.3f %.3f\n", now(CLOCK_MONOTONIC) - w, now(CLOCK_PROCESS_CPUTIME_ID) - c);
  }
  FILE *f = fopen("embeddings.bin", "wb");
  if (!f || fwrite(emb, sizeof emb, 1, f) != 1 || fclose(f)) return 4;
  return 0;
}
"""


SINGLE = r"""
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "NAME.h"
#include "short.h"
static int64_t ids[1][S], mask[1][S], types[1][S];
static float hidden[1][S][384], emb[1][384];
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(void) {
  if (NAME_bind_linked_weights() != KILN_OK) return 2;
  for (int t = 0; t < N; t++) { ids[0][t] = tokens[t]; mask[0][t] = 1; }
  double best = 1e9, bestw = 1e9;
  for (int r = 0; r < RUNS + 3; r++) {
    double w = now(CLOCK_MONOTONIC), c = now(CLOCK_PROCESS_CPUTIME_ID);
    if (CALL != KILN_OK) return 3;
    c = now(CLOCK_PROCESS_CPUTIME_ID) - c, w = now(CLOCK_MONOTONIC) - w;
    if (r >= 3 && c < best) best = c;
    if (r >= 3 && w < bestw) bestw = w;
  }
  printf("%.4f %.4f\n", bestw, best);
  return 0;
}
"""


def build_single(kiln, dynamic, work, sent):
    """The short sentence's harnesses: the f32 seq-128 build's run_rows
    (work/f32's objects) and a seq-16 build of DYNAMIC.onnx."""
    cc = os.environ.get("CC", "cc")
    d16 = os.path.join(work, "seq16")
    os.makedirs(d16, exist_ok=True)
    subprocess.run([kiln, "compile", dynamic, "--name", "m16", "-o", f"{d16}/m16.c", "--shape", "batch=1",
                    "--shape", f"sequence={SHORT}"], check=True)
    subprocess.run([cc, "-O2", "-march=native", "-ffp-contract=fast", "-I.", "-c", "m16.c", "m16_weights.S"],
                   cwd=d16, check=True)
    out = {}
    for d, name, s, call, objs in ((os.path.join(work, "f32"), "minilm", 128,
                                    f"minilm_run_rows(ids, mask, types, hidden, emb, {SHORT})",
                                    ["minilm.o", "minilm_weights.o"]),
                                   (d16, "m16", SHORT, "m16_run(ids, mask, types, hidden, emb)",
                                    ["m16.o", "m16_weights.o"])):
        with open(f"{d}/short.h", "w") as f:
            f.write(f"enum {{ N = {SHORT}, S = {s}, RUNS = {SINGLE_RUNS} }};\n")
            f.write("static const int64_t tokens[N] = {" + ", ".join(str(int(x)) for x in sent) + "};\n")
        with open(f"{d}/single.c", "w") as f:
            f.write(SINGLE.replace("NAME", name).replace("CALL", call))
        subprocess.run([cc, "-O2", "-std=c99", "-I.", "single.c"] + objs + ["-lm", "-o", "single"], cwd=d, check=True)
        out[name] = d
    return out


def time_single(d):
    out = subprocess.run(["./single"], cwd=d, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"batch: {d}/single failed ({out.returncode}): {out.stderr}")
    return tuple(float(x) for x in out.stdout.split())


def ort_single(sess, sent):
    ids = np.array([sent], np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    for _ in range(3):
        sess.run(None, feed)
    best, bestw = 1e9, 1e9
    for _ in range(SINGLE_RUNS):
        w, c = time.perf_counter(), time.process_time()
        sess.run(None, feed)
        best, bestw = min(best, time.process_time() - c), min(bestw, time.perf_counter() - w)
    return bestw * 1e3, best * 1e3


def build_kiln(kiln, model, work, precision, sents):
    d = os.path.join(work, precision)
    os.makedirs(d, exist_ok=True)
    flags = ["--rows-axis=input_ids:1,token_type_ids:1"] + (["--precision=bf16"] if precision == "bf16" else [])
    subprocess.run([kiln, "compile", model, "--name", "minilm", "-o", f"{d}/minilm.c"] + flags, check=True)
    with open(f"{d}/data.h", "w") as f:
        f.write(f"enum {{ NS = {len(sents)} }};\n")
        f.write("static const int lens[NS] = {" + ", ".join(str(len(s)) for s in sents) + "};\n")
        f.write("static const int64_t tokens[] = {" + ", ".join(str(int(x)) for s in sents for x in s) + "};\n")
    with open(f"{d}/harness.c", "w") as f:
        f.write(HARNESS)
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-march=native", "-ffp-contract=fast", "-I.", "-c", "minilm.c", "minilm_weights.S"],
                   cwd=d, check=True)
    subprocess.run([cc, "-O2", "-std=c99", "-I.", "harness.c", "minilm.o", "minilm_weights.o", "-lm", "-o", "harness"],
                   cwd=d, check=True)
    return d


def time_kiln(d):
    out = subprocess.run(["./harness"], cwd=d, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"batch: {d}/harness failed ({out.returncode}): {out.stderr}")
    rows = [tuple(float(x) for x in line.split()) for line in out.stdout.split("\n") if line.strip()]
    return min(r[0] for r in rows), min(r[1] for r in rows)


def ort_pass(sess, sents, bs, keep=None):
    w, c = time.perf_counter(), time.process_time()
    for i in range(0, len(sents), bs):
        grp = sents[i:i + bs]
        width = max(len(s) for s in grp)
        ids = np.zeros((len(grp), width), np.int64)
        mask = np.zeros_like(ids)
        for j, s in enumerate(grp):
            ids[j, :len(s)] = s
            mask[j, :len(s)] = 1
        out = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        if keep is not None:
            keep.extend(out[1])
    return (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("static")
    ap.add_argument("dynamic")
    ap.add_argument("work")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import onnxruntime as ort
    sents = sentences()
    dirs = {p: build_kiln(a.kiln, a.static, a.work, p, sents) for p in ("f32", "bf16")}
    short = np.concatenate([sents[0][:SHORT - 1], [102]]).astype(np.int64)
    single = build_single(a.kiln, a.dynamic, a.work, short)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(a.dynamic, so, providers=["CPUExecutionProvider"])
    ref = []
    ort_pass(sess, sents, 1, ref)
    ref = np.array(ref)
    times = {k: [] for k in list(dirs) + [f"ort{bs}" for bs in BATCHES] + list(single) + ["ort_short"]}
    for _ in range(a.rounds):
        for p, d in dirs.items():
            times[p].append(time_kiln(d))
        for bs in BATCHES:
            ort_pass(sess, sents, bs)
            times[f"ort{bs}"].append(ort_pass(sess, sents, bs))
        for name, d in single.items():
            times[name].append(time_single(d))
        times["ort_short"].append(ort_single(sess, short))

    def med(k, i):
        return statistics.median(t[i] for t in times[k])
    best = min(BATCHES, key=lambda bs: med(f"ort{bs}", 1))
    ort_cpu = med(f"ort{best}", 1)
    n_tok = sum(len(s) for s in sents)
    print(f"32 sentences, {n_tok} tokens (lengths {min(len(s) for s in sents)}-{max(len(s) for s in sents)}), "
          f"1 thread, median of {a.rounds} rounds; ORT {ort.__version__}")
    print("| engine | batch | CPU ms / 32 | wall ms / 32 | sentences/s (CPU) | vs ORT's best | agreement with ORT |")
    print("|---|---|---|---|---|---|---|")
    bad = False
    for bs in BATCHES:
        k = f"ort{bs}"
        mark = " (best)" if bs == best else ""
        print(f"| ORT f32{mark} | {bs}, padded to the batch's longest | {med(k, 1):.1f} | {med(k, 0):.1f} | "
              f"{32e3 / med(k, 1):.1f} | {ort_cpu / med(k, 1):.2f}x | - |")
    for p, d in dirs.items():
        emb = np.fromfile(os.path.join(d, "embeddings.bin"), dtype=np.float32).reshape(len(sents), -1)
        diff = float(np.abs(emb - ref).max())
        cos = float(min(e @ r / np.linalg.norm(e) / np.linalg.norm(r) for e, r in zip(emb, ref)))
        bad |= p == "f32" and diff > 1e-4
        print(f"| kiln {p} `minilm_run_batch` | 32, each at its own length | {med(p, 1):.1f} | {med(p, 0):.1f} | "
              f"{32e3 / med(p, 1):.1f} | {ort_cpu / med(p, 1):.2f}x | max abs {diff:.2g}, cosine >= {cos:.6f} |")
    print()
    print(f"One sentence of {SHORT} tokens, 1 thread, best of {SINGLE_RUNS} calls, median of {a.rounds} rounds:")
    print("| engine | build | CPU ms | wall ms | vs the seq-16 build | ORT / it |")
    print("|---|---|---|---|---|---|")
    rows = (("kiln f32 `minilm_run_rows(..., 16)`", "seq 128 (`--rows-axis`)", "minilm"),
            ("kiln f32 `m16_run`", "seq 16 (`--shape sequence=16`)", "m16"),
            ("ORT f32", "dynamic axes, [1, 16]", "ort_short"))
    for label, build, k in rows:
        print(f"| {label} | {build} | {med(k, 1):.2f} | {med(k, 0):.2f} | {med(k, 1) / med('m16', 1):.2f}x | "
              f"{med('ort_short', 1) / med(k, 1):.2f}x |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
