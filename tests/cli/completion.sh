#!/usr/bin/env bash
# completion.sh KILN ROOT — cmake/kiln.bash (the installed bash completion)
# completes commands, each command's options (read from kiln's own help)
# and model files. Prints one line per case and "N passed, N failed".
set -u
shopt -s extglob
kiln=$(realpath "$1") root=$(realpath "$2")
source "$root/cmake/kiln.bash"
pass=0 fail=0
expect() { # NAME WANT WORDS...: the last word is completed; WANT among the results
  local name=$1 want=$2
  shift 2
  COMP_WORDS=("$kiln" "$@"); COMP_CWORD=$(($# ))
  COMPREPLY=()
  _kiln
  if printf '%s\n' "${COMPREPLY[@]}" | grep -qx -- "$want"; then echo "ok   $name"; pass=$((pass + 1))
  else echo "FAIL $name: '$want' not in: ${COMPREPLY[*]}"; fail=$((fail + 1)); fi
}
cd "$root"
expect command compile comp
expect command_help help he
expect compile_option --shape compile --sha
expect check_option --interp check --inte
expect bench_option --runs bench --ru
expect weights_mode --weights-mode compile --weights-m
expect weights_file --weights compile --weights
expect check_weights_mode --weights-mode check --weights-
expect model_file tests/models/encoder_2l_op14/model.onnx compile tests/models/encoder_2l_op14/mo
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
