#!/usr/bin/env bash
# run_bad.sh KILN NO_PAST.onnx — `kiln compile --kv-cache` refusals: each
# case must exit 1 with one "kiln: ..." line holding the expected text
# and write no file. NO_PAST.onnx: any ONNX model without past inputs.
# Prints one line per case and "N passed, N failed".
set -u
export LC_ALL=C
kiln=$(realpath "$1") nopast=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
past=$here/decoder_with_past.onnx
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-past.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0

# case NAME EXPECTED ARGS...: run in an empty folder of its own
case_() {
  local name=$1 want=$2
  shift 2
  local dir=$work/$name why=""
  mkdir -p "$dir"
  local rc
  rc=$( (cd "$dir" && timeout 60 "$kiln" "$@" >stdout.txt 2>stderr.txt; echo $?) )
  local err lines after
  err=$(head -n 1 "$dir/stderr.txt")
  lines=$(wc -l <"$dir/stderr.txt")
  after=$(cd "$dir" && ls -A | grep -v '^std\(out\|err\)\.txt$')
  [ "$rc" = 1 ] || why="exit status $rc, expected 1"
  [ -z "$why" ] && [ "$lines" != 1 ] && why="$lines lines on stderr, expected 1"
  [ -z "$why" ] && [[ "$err" != *"$want"* ]] && why="message lacks '$want': $err"
  [ -z "$why" ] && [ -n "$after" ] && why="files written: $(echo $after)"
  if [ -z "$why" ]; then echo "ok   $name: $err"; pass=$((pass + 1)); else echo "FAIL $name: $why"; fail=$((fail + 1)); fi
}

case_ no_past "has no past_key_values input" compile "$nopast" --kv-cache=32 -o o.c
case_ concat_axis "concatenates 'past_key_values.0.key' on axis 1; expected axis 2" \
  compile "$here/bad_concat_axis.onnx" --kv-cache=8 -o o.c
case_ positions_from_past "node '/Shape_1' (Shape): reads 'past_key_values.0.key' other than through the Concat" \
  compile "$here/bad_positions_from_past.onnx" --kv-cache=8 -o o.c
case_ alibi "adds '/blocks.0/Mul_output_0' to the scores, computed from weights; expected a mask" \
  compile "$here/bad_alibi.onnx" --kv-cache=8 -o o.c
case_ positions_table "looks position_ids up in 'wpe.weight', a table of 64 positions; expected --kv-cache=64 or less" \
  compile "$past" --kv-cache=65 -o o.c
case_ lua_model "a .lua model makes its cache with decoder{}" \
  compile "$here/../tiny_decoder.lua" --kv-cache=32 -o o.c
case_ kv_cache_zero "--kv-cache=0: expected the cache's capacity" compile "$past" --kv-cache=0 -o o.c
case_ kv_cache_word "--kv-cache=lots: expected the cache's capacity" compile "$past" --kv-cache=lots -o o.c
case_ prefill_too_long "expected a prompt chunk no longer than the cache" \
  compile "$past" --kv-cache=16 --prefill=17 -o o.c
case_ prefill_alone "needs --kv-cache=N" compile "$past" --prefill=8 -o o.c
case_ dump_without_kv_cache "--dump-after=kv_cache: that pass runs only with --kv-cache=N" \
  compile "$past" --dump-after=kv_cache -o o.c
case_ passes_without_kv_cache "leaves out kv_cache, the pass --kv-cache=N asks for" \
  compile "$past" --kv-cache=16 --passes=bind,infer,fold,simplify,dce,plan -o o.c
case_ not_compile "is for \`kiln compile\`" info "$past" --kv-cache=16

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
