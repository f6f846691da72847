#!/usr/bin/env bash
# run_names.sh KILN BUILD_DIR WORK_DIR — no identifier of the generated C is
# named after an op (DESIGN.md, "Names"): compiles the seed family
# (examples/*.lua, tests/models/*/model.onnx, with their defaults), the real
# all-MiniLM-L6-v2 (its ONNX export and examples/bert.lua on the shipped
# safetensors) and SmolLM2-135M (examples/llama.lua on the Q4_1 GGUF), and
# fails naming each identifier that is an op's name and a number, with an
# exporter's "onnx_" in front or not: Transpose_22_packed, onnx_MatMul_245,
# Mul_66, Gelu_72 (the token must start there: bert_layer_0_intermediate_Mul_1
# is a scoped model name and passes). Comments and string literals are left
# out (they quote the model's node names on purpose).
# MiniLM comes from tools/minilm.py's folder ($KILN_MINILM_DIR, default
# BUILD_DIR/minilm, fetched as the minilm tests do); exit 77 (ctest's skip)
# after the other checks pass when it cannot be had. SmolLM2 comes from
# tests/gguf/fetch_smollm.sh ($KILN_SMOLLM_GGUF); that part is skipped with
# a note when it cannot be had.
set -euo pipefail
export LC_ALL=C

if [ $# -ne 3 ]; then
  echo "usage: $0 KILN BUILD_DIR WORK_DIR" >&2
  exit 2
fi
kiln=$1 build=$2 work=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"

# every op kiln knows, ONNX and its own (`kiln ops`: "  Name   versions ..."
# and "  Name"), as one alternation
ops=$("$kiln" ops | awk '/^  [A-Z][A-Za-z0-9]*( |$)/{print $1}' | paste -sd '|' -)
[ -n "$ops" ] || { echo "names: FAIL: no op names from '$kiln ops'"; exit 1; }
pattern="(^|[^A-Za-z0-9_])(onnx_)?($ops)_[0-9][A-Za-z0-9_]*"

fail=0 checked=0
# check NAME FILE.c: the op-made identifiers of FILE.c outside comments and strings
check() {
  local bad
  bad=$(perl -0pe 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s{"(\\.|[^"\\\n])*"}{""}g' "$2" |
        grep -noE "$pattern" | sed -E 's/:[^A-Za-z]*/: /' | sort -t: -k2 -u | head -n 8 || true)
  checked=$((checked + 1))
  if [ -n "$bad" ]; then
    echo "names: FAIL: $1: identifiers named after an op (line: identifier):"
    echo "$bad" | sed 's/^/  /'
    fail=1
  fi
}
# compile NAME MODEL [OPTIONS...]: kiln compile into WORK_DIR/NAME.c, then check
compile() {
  local name=$1
  shift
  if ! "$kiln" compile "$@" -o "$work/$name.c" >"$work/$name.log" 2>&1; then
    echo "names: FAIL: $name: kiln compile $*:"
    sed 's/^/  /' "$work/$name.log"
    fail=1
    return
  fi
  check "$name" "$work/$name.c"
}

for f in "$root"/examples/*.lua; do
  compile "lua_$(basename "$f" .lua)" "$f"
done
for d in "$root"/tests/models/*/; do
  compile "onnx_$(basename "$d")" "$d/model.onnx"
done

gguf=$("$root/tests/gguf/fetch_smollm.sh" "$build/smollm" 2>"$work/smollm.log") || gguf=
if [ -n "$gguf" ]; then
  compile smollm2 "$root/examples/llama.lua" --weights "$gguf" --set ctx=128
else
  echo "names: SmolLM2 skipped: $(tail -n 1 "$work/smollm.log")"
fi

minilm=skipped
data=${KILN_MINILM_DIR:-$build/minilm}
rc=0
if [ ! -f "$data/onnx/model.onnx" ] || [ ! -f "$data/model/model.safetensors" ]; then
  if /usr/bin/python3 -c 'import torch, onnx, numpy' 2>/dev/null; then
    /usr/bin/python3 "$root/tools/minilm.py" export --dir "$data" >"$work/minilm.log" 2>&1 || rc=$?
  else
    rc=77
    echo "Debian's python3-torch / python3-onnx are not installed" >"$work/minilm.log"
  fi
fi
if [ $rc = 0 ]; then
  compile minilm_onnx "$data/onnx/model.onnx"
  compile minilm_lua "$root/examples/bert.lua" --set seq=128 --set pooler=false \
    --weights "$data/model/model.safetensors"
  minilm=checked
elif [ $rc = 77 ]; then
  echo "names: MiniLM skipped (not fetched): $(tail -n 1 "$work/minilm.log")"
else
  echo "names: FAIL: tools/minilm.py export exited $rc:"
  sed 's/^/  /' "$work/minilm.log"
  fail=1
fi

[ $fail = 0 ] || exit 1
echo "names: $checked generated files, no identifier named after an op"
[ $minilm = checked ] || exit 77
