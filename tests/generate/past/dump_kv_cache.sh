#!/usr/bin/env bash
# dump_kv_cache.sh KILN — the --kv-cache rewrite is a listed pass,
# kv_cache: `kiln passes` lists it first; --dump-after=kv_cache prints the
# graph it made (one dump: the two entries, for each of the 2 layers two
# CacheWrites into the past_key_values states and a CachedAttention)
# and writes no C, while the graph before it has neither op; --dump-all
# writes it as 01-kv_cache.kir; without --kv-cache it is not run, counted
# or dumped (--dump-all's 01 is bind). Prints one line per case and
# "N passed, N failed".
set -u
export LC_ALL=C
kiln=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
model=$here/decoder_with_past.onnx
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-dump-kv.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
check() { # NAME CONDITION...: the condition, run in $work, must hold
  local name=$1
  shift
  if (cd "$work" && eval "$*") >/dev/null 2>&1; then echo "ok   $name"; pass=$((pass + 1));
  else echo "FAIL $name: $*"; fail=$((fail + 1)); fi
}
run() { (cd "$work" && "$kiln" "$@" >out.txt 2>err.txt); rc=$?; }

run passes
check listed_first 'test $rc = 0 && head -n 1 out.txt | grep -q "^  kv_cache  *with --kv-cache=N: "'
run compile "$model" --kv-cache=16 --dump-after=kv_cache
check dump_after 'test $rc = 0 && test "$(grep -c "^# ---- IR" out.txt)" = 1 && grep -qx "# ---- IR after kv_cache ----" out.txt &&
  grep -q "^  decoder ctx=16 prefill(" out.txt && test "$(grep -c "= CacheWrite %past_key_values\." out.txt)" = 8 &&
  test "$(grep -c "= CachedAttention " out.txt)" = 4 &&
  ! ls *.c *.h 2>/dev/null | grep -q .'
run compile "$model" --kv-cache=16 --dump-before=kv_cache
check dump_before 'test $rc = 0 && grep -qx "# ---- IR before kv_cache ----" out.txt && grep -q "past_key_values" out.txt &&
  ! grep -q "CacheWrite\|CachedAttention\|decoder ctx" out.txt'
run compile "$model" --kv-cache=16 --dump-all=dumps -q -o d.c
check dump_all 'test $rc = 0 && ! grep -q CacheWrite dumps/00-import.kir && grep -q "= CachedAttention " dumps/01-kv_cache.kir &&
  test -f dumps/02-bind.kir && test -f d.c'
run compile "$here/../../models/encoder_2l_op14/model.onnx" --dump-all=plain -q -o p.c
check not_asked 'test $rc = 0 && test -f plain/01-bind.kir && ! ls plain | grep -q kv_cache'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
