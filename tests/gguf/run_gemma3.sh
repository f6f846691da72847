#!/usr/bin/env bash
# run_gemma3.sh KILN WORK_DIR fixture|real — compiler/arch/gemma3.lua and
# examples/generate.c's SentencePiece tokenizer against references written
# in Python from the same GGUF:
#   fixture: tests/gguf/tiny_gemma3.gguf (random weights, 3 layers, window 4,
#            layers 0-1 local and 2 global, a Gemma-style vocabulary of 494
#            pieces; tools/make_gemma3_fixture.py) compiled with
#            --set ctx=64 --set prefill=8, weights inline; generate.c built
#            with gcc (and clang, for prefill 8) -Wall -Wextra -Werror:
#            1. --tokenize of every line of spm_cases.txt equals
#               spm_tokenize.py's ids, and --chat's turns its line 7;
#            2. 24 greedy tokens after a 13-token prompt (two prefill
#               chunks, past the window) equal tools/gemma3_reference.py's
#               (float64) and every step's logits are within 1e-5 of the
#               reference's largest (compare_logits.py); then the same with
#               the prompt fed as steps (--set prefill=1).
#   real:    Gemma 3 270M Q4_K_M (tests/gguf/fetch_gemma3.sh, into
#            BUILD/gemma3) compiled with --set ctx=256, blob linked in:
#            1. spm_cases.txt through the real 262,144-piece vocabulary;
#            2. 32 greedy tokens of "The capital of France is" (--ignore-eos)
#               equal the reference's, logits within 1e-3 of its largest;
#               the text is printed.
# The Python side needs numpy and PyPI gguf: the generate tests' venv
# (tests/generate/tokvenv.sh, $KILN_TOKVENV, default BUILD/generate-tests/tokvenv).
# Exit 0 pass, 1 fail, 77 (skip) when the venv or the model cannot be had.
set -euo pipefail
export LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
kiln=$1 work=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
gen=$root/tests/generate
fail() { echo "gemma3: FAIL: $*"; exit 1; }

py=$("$gen/tokvenv.sh" "${KILN_TOKVENV:-$(dirname "$work")/../generate-tests/tokvenv}") ||
  { echo "gemma3: SKIP: no venv with gguf (offline?)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"

# build DIR BLOB [clang]: DIR/gemma.c + examples/generate.c -> DIR/generate
# (and DIR/generate_clang); BLOB 1: the weights blob linked in
build() {
  local d=$1 blob=$2 objs=("$1/gemma.o")
  cc -std=c99 -O2 -Wall -Wextra -Werror -I"$d" -c "$d/gemma.c" -o "$d/gemma.o"
  if [ "$blob" = 1 ]; then
    cc -c "$d/gemma_weights.S" -I"$d" -o "$d/gemma_weights.o"
    objs+=("$d/gemma_weights.o")
  fi
  local flags=(-std=c11 -O2 -Wall -Wextra -Werror -DKILN_MODEL=gemma -DKILN_MODEL_UC=GEMMA -DKILN_MODEL_BLOB=$blob)
  cc "${flags[@]}" -I"$d" "$root/examples/generate.c" "${objs[@]}" -lm -o "$d/generate"
  if [ "$blob" = 0 ] && [ "${3:-}" = clang ] && command -v clang >/dev/null; then
    clang "${flags[@]}" -I"$d" "$root/examples/generate.c" "${objs[@]}" -lm -o "$d/generate_clang"
  fi
}

# tokenize GGUF DIR: spm_cases.txt through DIR/generate (and _clang) and spm_tokenize.py
tokenize() {
  "$py" "$here/spm_tokenize.py" "$1" "$here/spm_cases.txt" >"$2/ref_ids.txt"
  for app in "$2/generate" "$2/generate_clang"; do
    [ -x "$app" ] || continue
    while IFS= read -r line; do
      [ -n "$line" ] || continue
      p=$(printf '%s' "$line" | sed 's/\\n/\n/g; s/\\t/\t/g'; printf x) # keep trailing newlines
      "$app" --tokenize "${p%x}"
    done <"$here/spm_cases.txt" >"$2/app_ids.txt"
    diff "$2/ref_ids.txt" "$2/app_ids.txt" >"$2/ids.diff" ||
      fail "$(basename "$app")'s token ids differ from spm_tokenize.py's ($2/ids.diff: reference <, app >)"
  done
  # --chat: Gemma's turns around the prompt, as spm_cases.txt's line 7 writes them
  chat=$("$2/generate" --tokenize --chat "What is the capital of France?" 2>/dev/null)
  [ "$chat" = "$(sed -n 7p "$2/ref_ids.txt")" ] || fail "--chat gives $chat; expected line 7 of $2/ref_ids.txt"
  echo "gemma3: tokenizer: the same ids as spm_tokenize.py on $(grep -c . "$here/spm_cases.txt") cases and --chat"
}

# greedy DIR PROMPT N TOL [GGUF]: DIR/generate against gemma3_reference.py
greedy() {
  local d=$1 prompt=$2 n=$3 tol=$4 gguf=$5
  "$d/generate" --ids --tokens "$n" --ignore-eos --dump-logits "$d/logits.f32" "$prompt" >"$d/ids.txt" 2>"$d/timing.txt"
  "$py" "$root/tools/gemma3_reference.py" --gguf "$gguf" --prompt-ids "$(head -n 1 "$d/ids.txt")" \
    --tokens "$n" --ignore-eos --out "$d/ref" >/dev/null
  /usr/bin/python3 "$gen/compare_logits.py" "$d/ids.txt" "$d/logits.f32" "$d/ref" "$tol" || exit 1
}

case $mode in
fixture)
  gguf=$here/tiny_gemma3.gguf
  for p in 8 1; do
    d=$work/prefill$p
    "$kiln" compile "$root/compiler/arch/gemma3.lua" --weights "$gguf" --set ctx=64 --set prefill=$p \
      --weights-mode=inline -o "$d/gemma.c"
    grep -q 'window of 4' "$d/gemma.c" || fail "prefill=$p: no attention with a window of 4 in gemma.c"
    build "$d" 0 "$([ $p = 8 ] && echo clang)"
    [ $p = 8 ] && tokenize "$gguf" "$d"
    greedy "$d" "the capital of france is paris, the capital of italy is" 24 1e-5 "$gguf"
  done
  ;;
real)
  gguf=$("$here/fetch_gemma3.sh" "$(cd "$(dirname "$work")/.." && pwd)/gemma3") || exit $?
  d=$work/real
  "$kiln" compile "$gguf" --set ctx=256 -o "$d/gemma.c" # the description by general.architecture
  build "$d" 1
  tokenize "$gguf" "$d"
  greedy "$d" "The capital of France is" 32 1e-3 "$gguf"
  [ "$(head -n 1 "$d/ids.txt")" = 2,818,5279,529,7001,563 ] || fail "the prompt's ids are $(head -n 1 "$d/ids.txt")"
  "$d/generate" --tokens 32 "The capital of France is" 2>/dev/null
  ;;
*)
  echo "usage: run_gemma3.sh KILN WORK_DIR fixture|real" >&2
  exit 2
  ;;
esac
