#!/usr/bin/env bash
# check_example.sh KILN EXAMPLE.lua WORK_DIR — one Lua example, three ways
# to run it, one reference:
#
#   kiln export EXAMPLE.lua          -> W/onnx/model.onnx
#   make_data.py (ONNX Runtime)      -> W/onnx/test_data_set_0: seeded random
#                                       inputs, ORT's outputs (the reference)
#   kiln opt EXAMPLE.lua --passes=bind -> W/lua/model.kir: the graph exactly as
#                                       the script built it, with the same data
#   kiln check W/lua                 generated C (from the script) vs ORT
#   kiln check W/lua --interp        kiln's interpreter vs ORT
#   kiln compile EXAMPLE.lua         the .c a user gets: its size, and that it
#                                    builds with -std=c99 -Wall -Wextra -Werror
#
# so generated C == ONNX Runtime on the exported ONNX == interpreter, within
# rtol 1e-4 (atol 1e-5). The example's own header may hold
#   -- test: ARGS              kiln arguments for every step (--set k=v ...)
#   -- test-range: NAME=LO..HI  the range of an integer input (make_data.py)
#   -- test-pad: NAME=ID        the last quarter of each row of NAME is ID
# Prints kiln check's per-output errors, then one summary line
#   EXAMPLE: C max_abs_err X, interpreter max_abs_err Y, generated .c N bytes
# Exit 0 on agreement, 1 on any failure, 77 when the ONNX Runtime venv
# cannot be had.
set -euo pipefail
export LC_ALL=C

if [ $# -ne 3 ]; then
  echo "usage: $0 KILN EXAMPLE.lua WORK_DIR" >&2
  exit 2
fi
kiln=$1 example=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=$(basename "$example" .lua)
# a generative model (decoder{}: the IR has a decoder line) has no ONNX
# form: its KV cache is checked through the generated API instead
# (prefill + steps == prefill, bit for bit)
read -r -a args <<<"$(sed -n 's/^-- test: //p' "$example" | tr '\n' ' ')"
mkdir -p "$work"
"$kiln" opt "$example" "${args[@]}" --passes=bind -o "$work/probe.kir"
if grep -q '^  decoder ctx=' "$work/probe.kir"; then
  exec bash "$here/../generate/run_cache.sh" "$kiln" "$example" native 1 0 "${args[@]}"
fi
py=$(bash "$root/tools/venv.sh") || exit 77

# the header's "-- test:" arguments and "-- test-range:" ranges (words, no quoting)
read -r -a args <<<"$(sed -n 's/^-- test: //p' "$example" | tr '\n' ' ')"
ranges=()
for r in $(sed -n 's/^-- test-range: //p' "$example"); do
  ranges+=(--range "$r")
done
for r in $(sed -n 's/^-- test-pad: //p' "$example"); do
  ranges+=(--pad "$r")
done

rm -rf "$work"
mkdir -p "$work/onnx" "$work/lua" "$work/c"
step() { # step WHAT COMMAND...: run it; on failure say which step and stop
  local what=$1
  shift
  if ! "$@" >"$work/step.log" 2>&1; then
    echo "FAIL $name: $what" >&2
    cat "$work/step.log" >&2
    exit 1
  fi
}

step "kiln export" "$kiln" export "$example" ${args[@]+"${args[@]}"} -o "$work/onnx/model.onnx"
step "make_data.py (ONNX Runtime)" "$py" "$here/make_data.py" "$work/onnx/model.onnx" \
  "$work/onnx/test_data_set_0" --seed 1 ${ranges[@]+"${ranges[@]}"}
step "kiln opt --passes=bind" "$kiln" opt "$example" ${args[@]+"${args[@]}"} --passes=bind \
  -o "$work/lua/model.kir"
cp -r "$work/onnx/test_data_set_0" "$work/lua/"

# max_abs_err over every output of one kiln check run, printing its report
check() {
  local log=$work/check$1.log
  if ! "$kiln" check "$work/lua" $1 >"$log" 2>&1; then
    cat "$log" >&2
    echo "FAIL $name: kiln check${1:+ $1} disagrees with ONNX Runtime (or failed)" >&2
    exit 1
  fi
  sed -n 's/^ *test_data_set/  test_data_set/p' "$log" >&2
  sed -n 's/.*max_abs_err \([^ ]*\).*/\1/p' "$log" | sort -g | tail -1
}
echo "$name: generated C vs ONNX Runtime" >&2
c_err=$(check "")
echo "$name: interpreter vs ONNX Runtime" >&2
interp_err=$(check --interp)

step "kiln compile" "$kiln" compile "$example" ${args[@]+"${args[@]}"} -o "$work/c/$name.c"
step "cc -std=c99 -Wall -Wextra -Werror" "${CC:-cc}" -std=c99 -Wall -Wextra -Werror -fsyntax-only \
  "$work/c/$name.c"
size=$(wc -c <"$work/c/$name.c")
echo "$name: C max_abs_err $c_err, interpreter max_abs_err $interp_err, generated .c $size bytes"
