#!/usr/bin/env bash
# run_tokenizer_blob.sh KILN GGUF WORK_DIR — where a GGUF model's tokenizer
# tables go (compiler/tokenizer.c): examples/llama.lua on GGUF (the
# fixture, with its 256-token vocabulary) compiled with --weights-mode=blob and
# with --weights-mode=inline.
#   blob:   the tables are arrays of the weights blob (the .c keeps only
#           NAME_tokenizer_tables() and what is under 256 bytes), and
#           NAME_tokenizer_tables() gives NULL pointers before a bind
#           (tok_tables.c);
#   both:   the same tables byte for byte through the API, and
#           examples/generate.c (gcc, and clang when there is one, -Wall
#           -Wextra -Werror) gives the same prompt ids and greedy tokens.
set -euo pipefail
kiln=$1 gguf=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fail() { echo "tokenizer_blob: FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work/blob" "$work/inline"
compilers=cc
command -v clang >/dev/null && compilers="cc clang"
for mode in blob inline; do
  d=$work/$mode
  "$kiln" compile "$root/examples/llama.lua" --weights "$gguf" --weights-mode=$mode --set ctx=32 --set prefill=8 -o "$d/smol.c"
  blob=0
  objs="$d/smol.o"
  if [ $mode = blob ]; then
    blob=1 objs="$d/smol.o $d/smol_weights.o"
    cc -c -I"$d" "$d/smol_weights.S" -o "$d/smol_weights.o"
  fi
  for c in $compilers; do
    $c -std=c11 -O1 -Wall -Wextra -Werror -I"$d" -c "$d/smol.c" -o "$d/smol.o"
    $c -std=c11 -O1 -Wall -Wextra -Werror -I"$d" -DKILN_MODEL_BLOB=$blob "$here/tok_tables.c" $objs -lm -o "$d/tok_tables"
    "$d/tok_tables" >"$d/tables.$c" || fail "$mode, $c: tok_tables"
    $c -std=c11 -O1 -Wall -Wextra -Werror -I"$d" -DKILN_MODEL_BLOB=$blob "$root/examples/generate.c" $objs -lm -o "$d/generate"
    "$d/generate" --ids --tokens 8 --ignore-eos "hello world, 12 tokens" >"$d/ids.$c" 2>/dev/null || fail "$mode, $c: generate"
    "$d/generate" --detokenize --prompt-ids 1,2,3,65,66,67 >"$d/text.$c" || fail "$mode, $c: generate --detokenize"
  done
done
b=$work/blob i=$work/inline
if grep -Eq '(smol_token_text|smol_token_offset|smol_merges)\[[0-9A-Z_ +*]*\] = ' "$b/smol.c"; then
  fail "blob mode: a large tokenizer table is still a literal in smol.c"
fi
grep -q 'static const char smol_token_text\[SMOL_TOKEN_TEXT_SIZE\] =' "$i/smol.c" || fail "inline mode: no token text literal"
for c in $compilers; do
  cmp -s "$b/tables.$c" "$i/tables.$c" || fail "$c: the tables differ between blob and inline"
  cmp -s "$b/ids.$c" "$i/ids.$c" || fail "$c: generate's ids differ: $(cat "$b/ids.$c") vs $(cat "$i/ids.$c")"
  cmp -s "$b/text.$c" "$i/text.$c" || fail "$c: --detokenize differs"
done
[ "$(wc -l <"$b/ids.cc")" = 2 ] || fail "generate printed '$(cat "$b/ids.cc")'"
echo "tokenizer_blob: the tables ($(stat -c %s "$b/tables.cc") bytes) are the same in the blob and inline; ids $(head -n 1 "$b/ids.cc" | cut -c1-40)..."
echo "tokenizer_blob: PASS"
