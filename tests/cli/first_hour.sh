#!/usr/bin/env bash
# first_hour.sh KILN ROOT — what a new user meets first (issue 26), the
# good paths run_cli.sh's refusals leave out: help per command and the
# version; outputs named after the input and into folders -o names (made
# when missing); --dump-after alone writes no C; a stale blob from an
# earlier --weights-mode=blob compile is removed; the old spelling
# --weights=blob still works, with a note; a symbol bound twice
# consistently is accepted; kiln info on a model with symbolic dims.
# Prints one line per case and "N passed, N failed".
set -u
kiln=$(realpath "$1") root=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-first-hour.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
model=$root/tests/models/encoder_2l_op14/model.onnx
symbolic=$root/tests/bad/unbound_dim.onnx
check() { # NAME CONDITION...: the condition, run in $work, must hold
  local name=$1
  shift
  if (cd "$work" && eval "$*") >/dev/null 2>&1; then echo "ok   $name"; pass=$((pass + 1));
  else echo "FAIL $name: $*"; fail=$((fail + 1)); fi
}
run() { (cd "$work" && "$kiln" "$@" >out.txt 2>err.txt); rc=$?; }

run compile --help; check compile_help 'test $rc = 0 && grep -q "compile MODEL" out.txt && grep -q -- "--shape" out.txt && ! grep -q "check options" out.txt'
run help check; check help_check 'test $rc = 0 && grep -q "check options" out.txt && grep -q -- "--rtol" out.txt'
# the command's entry as in kiln --help: its lines one after another, no blank between
check help_check_entry 'test "$(sed -n 3,5p out.txt | grep -c "^ ")" = 3'
run check -h; check check_dash_h 'grep -q "usage: kiln check" out.txt'
run -V; check version_short 'grep -q "^kiln [0-9]" out.txt'
run --version; check version_long 'grep -q "^kiln [0-9]" out.txt'

cp "$model" "$work/enc.onnx"
run compile enc.onnx -q; check default_output_stem 'test -f enc.c && test -f enc.h && test -f kiln_rt.h && grep -q "enc_run" enc.h && ! test -e model.c'
run compile enc.onnx -q -o out/sub/net.c; check o_makes_folders 'test -f out/sub/net.c && test -f out/sub/net.h && test -f out/sub/kiln_rt.h'
rm -f "$work"/*.c "$work"/*.h
run compile enc.onnx --dump-after=fold; check dump_after_only_stdout 'grep -q "^graph @" out.txt && ! ls *.c *.h 2>/dev/null | grep -q .'
run compile enc.onnx -q --weights-mode=blob -o s.c
check blob_written 'test -f s.weights.bin && test -f s_weights.S'
run compile enc.onnx --weights-mode=inline -o s.c
check stale_blob_removed '! test -e s.weights.bin && ! test -e s_weights.S && grep -q "removed s.weights.bin" err.txt'
# the old spelling --weights=blob|inline|auto (one release): the same files,
# and one note on stderr naming the new one
run compile enc.onnx -q --weights-mode=blob -o new/s.c
run compile enc.onnx -q --weights=blob -o old/s.c
check weights_old_spelling_note 'test $rc = 0 && test "$(cat err.txt)" = "kiln: --weights=blob is deprecated: use --weights-mode=blob"'
check weights_old_spelling_same 'for f in s.c s.h s.weights.bin s_weights.S kiln_rt.h; do cmp new/$f old/$f || exit 1; done'
run compile enc.onnx -q --weights inline -o old_inline/s.c
check weights_old_spelling_inline 'test $rc = 0 && grep -qx "kiln: --weights inline is deprecated: use --weights-mode=inline" err.txt && ! test -e old_inline/s.weights.bin'
# blob mode: a run before the bind returns KILN_E_WEIGHTS_UNBOUND, after it KILN_OK
cat > "$work/unbound.c" <<'EOC'
#include <stdio.h>
#include "ub.h"
static float src[2][16][64], out[2][16][64];
int main(void) {
  int before = ub_run(src, out);
  int bind = ub_bind_linked_weights();
  int after = ub_run(src, out);
  printf("%d %d %d %s\n", before, bind, after, ub_weights_error(before));
  return !(before == KILN_E_WEIGHTS_UNBOUND && bind == KILN_OK && after == KILN_OK);
}
EOC
run compile enc.onnx -q --weights-mode=blob -o ub/ub.c
check run_before_bind '(cd ub && cc -O1 -I. ../unbound.c ub.c ub_weights.S -lm -o app && ./app | grep -q "^6 0 0 no weights blob bound")'
run compile "$symbolic" -q -o sym.c --shape X=2x3 --shape batch=2; check symbol_bound_twice 'test $rc = 0 && test -f sym.c'
run info "$symbolic"; check info_symbolic 'test $rc = 0 && grep -q "f32\[1,3\]" out.txt && grep -q "symbolic dims .batch. are taken as 1" err.txt'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
