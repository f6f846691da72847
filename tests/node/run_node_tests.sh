#!/usr/bin/env bash
# run_node_tests.sh — the ONNX conformance ratchet.
#
#   run_node_tests.sh KILN c|interp [--set=debian|onnx120] [--update]
#
# Runs every ONNX backend node test of a set that is not in
# out_of_scope.txt through `kiln check` (generated C) or `kiln check
# --interp` (reference interpreter) and compares with the committed list of
# that set and mode:
#   debian   Debian's libonnx-testdata (onnx 1.12, 932 tests, opsets up to
#            17): pass_c.txt / pass_interp.txt
#   onnx120  onnx 1.20.0's 1,653 tests (opsets up to 25), fetched into
#            $KILN_NODE_DIR by tools/fetch_onnx_node_tests.py:
#            pass_c_onnx120.txt / pass_interp_onnx120.txt
# - a listed test that fails is a regression: the suite fails;
# - a test that passes but is not listed fails the suite too, so the list
#   stays exact: rerun with --update to add it (and commit the list).
# Ends with "N passed, N failed". KILN_NODE_DIR overrides the test folder.
set -u
kiln=$(realpath "$1")
mode=$2
shift 2
set_name=debian update=
for a in "$@"; do
  case $a in
    --set=debian|--set=onnx120) set_name=${a#--set=} ;;
    --update) update=--update ;;
    *) echo "usage: run_node_tests.sh KILN c|interp [--set=debian|onnx120] [--update]" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
case $set_name in
  debian) node=${KILN_NODE_DIR:-/usr/include/onnx/backend/test/data/node} suffix= ;;
  onnx120) node=${KILN_NODE_DIR:?set KILN_NODE_DIR to the onnx 1.20 node folder} suffix=_onnx120 ;;
esac
list="$here/pass_$mode$suffix.txt"
case $mode in
  c) flags="-q --cflags=-O1" ;;
  interp) flags="-q --interp" ;;
  *) echo "usage: $0 KILN c|interp [--set=debian|onnx120] [--update]" >&2; exit 2 ;;
esac
[ -d "$node" ] || { echo "no node tests at $node (install libonnx-testdata)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cut -f1 "$here/out_of_scope.txt" | sort > "$work/skip"
ls "$node" | sort | comm -23 - "$work/skip" > "$work/all"
jobs=$(nproc 2>/dev/null || echo 2)
# one line per test: "name pass|fail"; logs of failures kept for the report
export kiln flags node work
xargs -P "$jobs" -I{} sh -c '
  if timeout 120 "$kiln" check $flags "$node/{}" > "$work/{}.log" 2>&1; then
    echo "{} pass"
  else
    echo "{} fail"
  fi' < "$work/all" | sort > "$work/results"

grep " pass$" "$work/results" | cut -d" " -f1 > "$work/passed"
grep " fail$" "$work/results" | cut -d" " -f1 > "$work/failed"
touch "$list"
sort "$list" | grep -v '^$' > "$work/expected"
comm -12 "$work/expected" "$work/failed" > "$work/regressed"
comm -23 "$work/passed" "$work/expected" > "$work/new"

npass=$(wc -l < "$work/passed"); nfail=$(wc -l < "$work/failed")
nreg=$(wc -l < "$work/regressed"); nnew=$(wc -l < "$work/new")
nskip=$(wc -l < "$work/skip")
while read -r t; do
  echo "REGRESSION $t:"; sed 's/^/    /' "$work/$t.log" | tail -5
done < "$work/regressed"
if [ "$update" = "--update" ]; then
  cp "$work/passed" "$list"
  echo "updated $list ($npass tests)"
  nnew=0; nreg=0
else
  while read -r t; do echo "NEWLY PASSING $t (run with --update and commit $list)"; done < "$work/new"
fi
echo "node tests ($set_name, $mode): $npass of $(wc -l < "$work/all") in scope pass; $nskip out of scope; $nreg regressions; $nnew newly passing"
bad=$((nreg + nnew))
echo "$((npass - nnew)) passed, $bad failed"
[ "$bad" = 0 ]
