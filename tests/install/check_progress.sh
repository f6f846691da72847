#!/usr/bin/env bash
# check_progress.sh KILN WORK_DIR — compile's progress on stderr
# (compiler/cmd/progress.c): on a terminal (faked with util-linux `script`) the
# passes, the count and every file written with its MB; nothing with -q or
# --quiet, nothing when stderr is a file; stdout untouched either way; an
# error on a terminal still reads as one whole line.
# Ends with "N passed, N failed"; exit 1 on any failure.
set -uo pipefail
export LC_ALL=C
kiln=$(realpath "$1") work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$root/tests/models/encoder_2l_op14/model.onnx
rm -rf "$work" && mkdir -p "$work/plain" "$work/tty" && cd "$work" || exit 1
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
# the screen's lines: each line's text after its last carriage return / erase
screen() { tr -d '\033' <"$1" | sed -e 's/\[K//g' -e 's/\r$//' -e 's/.*\r//'; }

"$kiln" compile "$model" --weights-mode=blob -o plain/m.c >out.txt 2>err.txt
[ $? = 0 ] && [ ! -s out.txt ] && [ ! -s err.txt ] && ok "stderr not a terminal: compile prints nothing" ||
  { bad "compile printed without a terminal:"; cat out.txt err.txt; }

if ! command -v script >/dev/null; then
  echo "no util-linux script: the terminal cases are not run"
else
  script -qec "'$kiln' compile '$model' --weights-mode=blob -o tty/m.c" /dev/null </dev/null >tty.log 2>&1
  rc=$?
  screen tty.log >tty.txt
  if [ $rc = 0 ] && grep -q 'kiln: pass 1/[0-9]* bind' tty.log && grep -q 'kiln: pass [0-9]*/[0-9]* plan' tty.log &&
     grep -qx 'kiln: [0-9]* passes in [0-9.]* s' tty.txt &&
     grep -qx 'kiln: wrote tty/m.weights.bin (0.40 MB)' tty.txt && grep -qx 'kiln: wrote tty/m.c (0.[0-9][0-9] MB)' tty.txt; then
    ok "terminal: $(tr '\n' '|' <tty.txt)"
  else
    bad "terminal: rc $rc, expected passes, their count and files with MB:"; cat -A tty.log | head -5
  fi
  same=1
  for f in m.c m.h m_weights.S m.weights.bin; do cmp -s plain/$f tty/$f || same=0; done
  [ $same = 1 ] && ok "the same files with and without a terminal" ||
    bad "the files differ with a terminal"
  for q in -q --quiet; do
    script -qec "'$kiln' compile '$model' $q -o quiet.c" /dev/null </dev/null >quiet.log 2>&1
    [ $? = 0 ] && [ ! -s quiet.log ] && [ -f quiet.c ] && ok "terminal with $q: nothing printed" ||
      { bad "terminal with $q printed:"; cat -A quiet.log | head -3; }
  done
  script -qec "'$kiln' compile '$model' --shape src=2x16x65 -o err.c" /dev/null </dev/null >err.log 2>&1
  rc=$?
  screen err.log >err.txt
  [ $rc = 1 ] && [ "$(grep -c . err.txt)" = 1 ] && grep -q "^kiln: $model: .*src" err.txt &&
    ok "terminal, bad input: one whole error line ($(cut -c1-100 err.txt)...)" ||
    { bad "terminal, bad input: rc $rc"; cat -A err.log | head -5; }
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
