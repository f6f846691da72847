"""interleave.py — two kiln builds (before and after a change) and ONNX
Runtime on one model, at 1 and 2 threads, in interleaved rounds.

    python bench/interleave.py --before OLD/kiln --after build/kiln CASE_DIR \
        [--shape x=1x3x48x320] [--rounds 6] [--runs 100]

CASE_DIR is a model folder in the backend-test layout (model.onnx,
test_data_set_0/input_K.pb; bench/run.sh makes the conv rows' under
$KILN_BENCH_DIR/models). Each engine is built or loaded once (bench/
compare.py's KilnProgram and OrtRunner: kiln bench --keep with the case's
inputs, ORT with its inputs and outputs bound once); each round then runs
every engine --runs inferences, the order rotated from round to round, so a
spell of load on the shared machine falls on all of them. Prints each
engine's median and min over all its inferences and ORT's time over each
kiln's (above 1: kiln faster). The min is what contention inflates least;
the median what a user sees on the machine as it is.
"""
import argparse
import glob
import os
import statistics
import sys

import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case")
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runs", type=int, default=100)
    a = ap.parse_args()
    model = os.path.join(a.case, "model.onnx")
    sess_inputs = [i.name for i in onnx.load(model).graph.input]
    files = sorted(glob.glob(os.path.join(a.case, "test_data_set_0", "input_*.pb")))
    feed, args = {}, []
    for name, path in zip(sess_inputs, files):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        feed[name] = numpy_helper.to_array(t)
        args += ["--input", "%s=%s" % (name, path)]
    for s in a.shape:
        args += ["--shape", s]
    eng = {}
    for th in (1, 2):
        eng["kiln before %dT" % th] = compare.KilnProgram(a.before, model, args, th)
        eng["kiln after %dT" % th] = compare.KilnProgram(a.after, model, args, th)
        eng["ORT %dT" % th] = compare.OrtRunner(model, th, feed)
    names = list(eng)
    times = {k: [] for k in names}
    for r in range(a.rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            times[k] += eng[k].times(a.runs)
    print("| engine | median ms | min ms |")
    print("|---|---|---|")
    for k in names:
        print("| %s | %.3f | %.3f |" % (k, statistics.median(times[k]), min(times[k])))
    for th in (1, 2):
        o = times["ORT %dT" % th]
        for w in ("before", "after"):
            kk = times["kiln %s %dT" % (w, th)]
            print("ORT / kiln %s, %d thread%s: median %.2f, min %.2f" % (
                w, th, "s" if th > 1 else "", statistics.median(o) / statistics.median(kk), min(o) / min(kk)))
    for k in names:
        if k.startswith("kiln"):
            eng[k].remove()


if __name__ == "__main__":
    main()
