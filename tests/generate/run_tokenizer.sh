#!/usr/bin/env bash
# run_tokenizer.sh TOK_STUB WORK_DIR — the tokenizer tables
# (compiler/emit/tokenizer.c) and examples/generate.c's tokenizer, before and
# without a compiled model: tok_stub writes a GGUF's tables plus a stub
# model behind the generative API, and generate.c is built on them (gcc,
# and clang when there is one, -std=c11 -Wall -Wextra -Werror).
#   1. tiny GGUF files (make_tiny_gguf.py): the good one gives the same ids
#      as Hugging Face tokenizers on tiny_cases.txt; each bad one fails with
#      its expected message; the tables are the same bytes twice over.
#   2. the real SmolLM2 vocabulary (fetched once into BUILD/smollm by
#      tests/gguf/fetch_smollm.sh): the same ids as Hugging Face on
#      tokenizer_cases.txt and both round trips
#      (tokenizer_check.py), the .c's size and gcc's time, and the stub's
#      greedy loop through generate.c (--ids, --dump-logits, --tokens).
# The Python side needs PyPI tokenizers and gguf: a venv of its own in
# $KILN_TOKVENV (default WORK_DIR/../tokvenv), made once. Exit 77 (skip)
# when the venv or the model cannot be had (offline).
set -euo pipefail
export LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
stub=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${KILN_TOKVENV:-$(dirname "$work")/tokvenv}
fail() { echo "tokenizer: FAIL: $*"; exit 1; }

py=$("$here/tokvenv.sh" "$venv") || { echo "tokenizer: SKIP: no venv with tokenizers and gguf (offline?)"; exit 77; }
rm -rf "$work"
mkdir -p "$work/tiny" "$work/smol"

# build_app DIR: DIR/smol.c + examples/generate.c -> DIR/generate (and DIR/generate_clang)
build_app() {
  cc -std=c11 -O2 -Wall -Wextra -Werror -c "$1/smol.c" -o "$1/smol.o"
  cc -std=c11 -O2 -Wall -Wextra -Werror -I"$1" "$root/examples/generate.c" "$1/smol.o" -o "$1/generate"
  if command -v clang >/dev/null; then
    clang -std=c11 -O2 -Wall -Wextra -Werror -I"$1" "$root/examples/generate.c" "$1/smol.o" -o "$1/generate_clang"
  fi
}

# 1. tiny files
"$py" "$here/make_tiny_gguf.py" "$work/tiny"
"$stub" "$work/tiny/good.gguf" smol "$work/tiny" 2>/dev/null
cp "$work/tiny/smol.c" "$work/tiny/first.c"
"$stub" "$work/tiny/good.gguf" smol "$work/tiny" 2>/dev/null
cmp -s "$work/tiny/smol.c" "$work/tiny/first.c" || fail "the tables differ between two runs"
build_app "$work/tiny"
"$py" "$here/tokenizer_check.py" "$work/tiny/good.gguf" "$work/tiny/generate" "$here/tiny_cases.txt" ||
  fail "tiny vocabulary"
for bad in "$work"/tiny/bad_*.gguf; do
  if "$stub" "$bad" smol "$work/tiny/out" >"$work/tiny/msg" 2>&1; then
    fail "$(basename "$bad") was accepted"
  fi
  grep -qF -- "$(cat "${bad%.gguf}.expect")" "$work/tiny/msg" || fail "$(basename "$bad"): got '$(cat "$work/tiny/msg")'"
done
echo "tokenizer: tiny GGUF: ids as Hugging Face's, $(ls "$work"/tiny/bad_*.gguf | wc -l) bad vocabularies refused"

# 2. the real vocabulary
rc=0
gguf=$("$root/tests/gguf/fetch_smollm.sh" "$(cd "$(dirname "$work")/.." && pwd)/smollm") || rc=$?
[ $rc = 0 ] || exit $rc
"$stub" "$gguf" smol "$work/smol" 2>/dev/null
t0=$(date +%s.%N)
build_app "$work/smol"
t1=$(date +%s.%N)
echo "tokenizer: SmolLM2 tables: $(stat -c %s "$work/smol/smol.c") bytes of C; the stub model and generate.c built in $(echo "$t1 - $t0" | bc) s"
"$py" "$here/tokenizer_check.py" "$gguf" "$work/smol/generate" "$here/tokenizer_cases.txt" || fail "SmolLM2 vocabulary"
if [ -x "$work/smol/generate_clang" ]; then
  "$py" "$here/tokenizer_check.py" "$gguf" "$work/smol/generate_clang" "$here/tokenizer_cases.txt" >/dev/null ||
    fail "SmolLM2 vocabulary, clang's build"
fi
# the stub's logits pick token + 1: 'The capital of France is' -> ids 315..318
out=$("$work/smol/generate" --ids --tokens 4 --dump-logits "$work/smol/logits.f32" "The capital of France is" 2>"$work/smol/err")
[ "$out" = $'504,3575,282,4649,314\n315,316,317,318' ] || fail "the stub's greedy run printed '$out'"
[ "$(stat -c %s "$work/smol/logits.f32")" = $((4 * 4 * 49152)) ] || fail "--dump-logits wrote $(stat -c %s "$work/smol/logits.f32") bytes"
grep -Eq '^timing: prefill_tokens=5 prefill_ms=[0-9.]+ prefill_tok_s=[0-9.]+ decode_tokens=3 decode_ms=[0-9.]+ decode_tok_s=[0-9.]+$' \
  "$work/smol/err" || fail "the timing line: $(cat "$work/smol/err")"
out=$("$work/smol/generate" --chat --system "" --tokenize "Hi")
[ "$out" = "1,4093,198,26843,2,198,1,520,9531,198" ] || fail "--chat --tokenize printed '$out'"
echo "tokenizer: PASS"
