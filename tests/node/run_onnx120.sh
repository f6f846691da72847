#!/usr/bin/env bash
# run_onnx120.sh KILN c|interp DIR — onnx 1.20.0's node tests (1,653, opsets
# up to 25) through kiln: fetches them into DIR once (tools/
# fetch_onnx_node_tests.py; DIR is shared by the c and interp runs, so the
# fetch holds DIR/.lock), then runs the ratchet of run_node_tests.sh
# --set=onnx120 against pass_MODE_onnx120.txt. Exit 77 (CTest's skip), with a
# line saying why, when the tests cannot be fetched (offline).
set -u
kiln=$1 mode=$2 dir=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
rc=0
flock "$dir/.lock" /usr/bin/python3 "$here/../../tools/fetch_onnx_node_tests.py" "$dir" || rc=$?
if [ $rc = 77 ]; then
  echo "node tests (onnx120, $mode): SKIP: onnx 1.20.0's node tests could not be fetched"
  exit 77
fi
[ $rc = 0 ] || exit 1
KILN_NODE_DIR="$dir/node" exec "$here/run_node_tests.sh" "$kiln" "$mode" --set=onnx120
