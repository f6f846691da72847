#!/usr/bin/env bash
# check_translate_app.sh KILN WORK_DIR — examples/translate_app.c builds
# against the C generated from examples/transformer.lua, exactly as its
# header says (-std=c99 -Wall -Wextra -Werror added), decodes, and rejects a
# bad token id with exit 1. Greedy decoding is deterministic: two runs print
# the same sequence. Built against --set cache=true (encode once, then one
# decoder position per token, KV cache) it prints the same tokens as the
# recomputing build for every source tried.
set -euo pipefail
export LC_ALL=C

if [ $# -ne 2 ]; then
  echo "usage: $0 KILN WORK_DIR" >&2
  exit 2
fi
kiln=$1 work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work/out"
"$kiln" compile "$root/examples/transformer.lua" -o "$work/out/transformer.c"
"${CC:-cc}" -O2 -std=c99 -Wall -Wextra -Werror -I"$work/out" "$root/examples/translate_app.c" \
  "$work/out/transformer.c" $(ls "$work"/out/*_weights.S 2>/dev/null) -lm -o "$work/out/translate"
mkdir -p "$work/cached"
"$kiln" compile "$root/examples/transformer.lua" --set cache=true -o "$work/cached/transformer.c"
"${CC:-cc}" -O2 -std=c99 -Wall -Wextra -Werror -I"$work/cached" "$root/examples/translate_app.c" \
  "$work/cached/transformer.c" "$work/cached/transformer_weights.S" -lm -o "$work/cached/translate"
for src in "5 17 42 8 99 3" "3" "999 4 4 4 4 4 4 4 4 4 4 4 4 4 4" "10 20 30 40 50 60 70"; do
  a=$("$work/out/translate" $src) b=$("$work/cached/translate" $src)
  if [ "$a" != "$b" ]; then
    printf 'FAIL: source %s: recomputing and cached builds differ\n%s\n%s\n' "$src" "$a" "$b" >&2
    exit 1
  fi
  echo "$b (both builds)"
done
first=$("$work/out/translate" 5 17 42 8 99 3)
echo "$first"
grep -Eq '^source: 5 17 42 8 99 3 2$' <<<"$first"
grep -Eq '^output:( [0-9]+){1,15}$' <<<"$first"
[ "$("$work/out/translate" 5 17 42 8 99 3)" = "$first" ]
if "$work/out/translate" 5 1000 2>/dev/null; then
  echo "FAIL: token id 1000 (out of the vocabulary) was accepted" >&2
  exit 1
fi
