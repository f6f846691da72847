#!/usr/bin/env bash
# run_examples.sh KILN — the attention-variant examples (examples/*.lua of
# nn_variants.lua: Sparse, Explicit Sparse, entmax, Transformer-XL) in the
# configurations other than their defaults that change the graph (the
# defaults are tests/lua's lua_example_* tests): `kiln export` (with the same
# --set), seeded inputs and ONNX Runtime's outputs (tests/dsl/make_case.py),
# then `kiln check --model` the script through generated C and through the
# interpreter (rtol 1e-4, atol 1e-5). Prints each case's max error and the
# generated .c size; exit 77 (skip) without the onnxruntime venv. Ends with
# "N passed, N failed".
set -uo pipefail
kiln=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
py=$(bash "$root/tools/venv.sh") || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0

# name | example | vocab (token ids are drawn below it) | --set flags
cases="
sparse_fixed       sparse_transformer   100 pattern=fixed c=2
sparse_heads       sparse_transformer   100 combine=heads stride=3
explicit_causal    explicit_sparse      100 causal=true k=4
sparsemax          entmax_attention     100 normalizer=sparsemax
entmax_alpha       entmax_attention     100 alpha=1.3
entmax_learned     entmax_attention     100 alpha=learned
xl_unmasked_memory transformer_xl       256 mask_empty_memory=false seg=6 mem=10
"

# The largest max_abs_err kiln check printed.
max_err() { grep -o 'max_abs_err [^ ]*' "$1" | awk '{ if ($2 > m) m = $2 } END { print m + 0 }'; }

while read -r name example vocab sets; do
  [ -n "$name" ] || continue
  script=$root/examples/$example.lua
  dir=$work/$name
  mkdir -p "$dir/gen"
  flags=()
  for s in $sets; do flags+=(--set "$s"); done
  if ! "$kiln" compile "$script" "${flags[@]}" -o "$dir/gen/$name.c"; then
    echo "FAIL $name: kiln compile"; fail=$((fail + 1)); continue
  fi
  size=$(wc -c <"$dir/gen/$name.c")
  if ! "$kiln" export "$script" "${flags[@]}" -o "$dir/model.onnx" ||
     ! "$py" "$root/tests/dsl/make_case.py" "$dir/model.onnx" "$dir" --int-high "$vocab"; then
    echo "FAIL $name: export or ONNX Runtime"; fail=$((fail + 1)); continue
  fi
  for mode in c interp; do
    opt=(); [ $mode = interp ] && opt=(--interp)
    if "$kiln" check "$dir" --model "$script" "${flags[@]}" "${opt[@]}" >"$dir/check_$mode" 2>&1; then
      pass=$((pass + 1))
      printf '%-20s %-7s max_abs_err %-10s generated .c %s bytes\n' "$name" "$mode" \
        "$(max_err "$dir/check_$mode")" "$size"
    else
      cat "$dir/check_$mode"
      echo "FAIL $name ($mode)"; fail=$((fail + 1))
    fi
  done
done <<<"$cases"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
