"""compare_logits.py APP_IDS APP_LOGITS REF_DIR [TOL] — kiln's greedy run
(examples/generate.c --ids --dump-logits) against tools/llama_reference.py's
(--out REF_DIR): the same generated ids, and at every step k the logits
within TOL (default 1e-3) by the metric
    err_k = max_i |app_k[i] - ref_k[i]| / max_i |ref_k[i]|
(the largest difference, relative to the step's largest reference logit:
a per-element relative error would blow up on logits near zero, which
decide nothing). Prints the worst step; exit 0 when every step passes."""
import sys

import numpy as np


def ids_lines(path):
    lines = open(path).read().split("\n")
    return [[int(x) for x in l.split(",") if x] for l in lines[:2]]


def main():
    app_ids, app_logits, ref_dir = sys.argv[1:4]
    tol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-3
    a_prompt, a_gen = ids_lines(app_ids)
    r_prompt, r_gen = ids_lines(ref_dir + "/ids.txt")
    ref = np.load(ref_dir + "/logits.npy").astype(np.float64)
    app = np.fromfile(app_logits, dtype=np.float32).astype(np.float64)
    ok = True
    if a_prompt != r_prompt:
        print(f"reference: FAIL the prompts differ: app {a_prompt}, reference {r_prompt}")
        return 1
    if a_gen != r_gen:
        k = next((i for i, (x, y) in enumerate(zip(a_gen, r_gen)) if x != y), min(len(a_gen), len(r_gen)))
        print(f"reference: FAIL the generated ids differ from step {k}:\n  app {a_gen}\n  ref {r_gen}")
        ok = False
    vocab = ref.shape[1]
    if app.size % vocab:
        print(f"reference: FAIL the app's logits are {app.size} floats, not a multiple of {vocab}")
        return 1
    app = app.reshape(-1, vocab)
    n = min(len(app), len(ref))
    if len(app) != len(ref):
        print(f"reference: FAIL {len(app)} steps of logits from the app, {len(ref)} from the reference")
        ok = False
    err = np.abs(app[:n] - ref[:n]).max(1) / np.abs(ref[:n]).max(1)
    worst = int(err.argmax())
    print(f"reference: {n} steps, logits err max {err.max():.3g} (step {worst}), median {np.median(err):.3g}; "
          f"tolerance {tol:g}")
    if err.max() > tol or not np.isfinite(app[:n]).all():
        print(f"reference: FAIL steps over the tolerance: {[int(i) for i in np.nonzero(~(err <= tol))[0]]}")
        ok = False
    if ok:
        print(f"reference: PASS: the same {len(a_gen)} tokens, every step's logits within {tol:g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
