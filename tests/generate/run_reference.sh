#!/usr/bin/env bash
# run_reference.sh KILN WORK_DIR — SmolLM2-135M-Instruct (Q4_1 GGUF)
# compiled by kiln against a PyTorch Llama of our own (issue 10):
#   kiln compile examples/llama.lua --weights FILE --set ctx=128 -o WORK/smol.c
#   cc the model (+ the weights blob, linked in) and examples/generate.c
#   WORK/generate --ids --tokens 32 --ignore-eos --dump-logits logits.f32 "The capital of France is"
#   (greedy: " Paris.\n\nThe answer is: 2018-01-22 12:12:53." then EOS at
#   token 30, and on: --ignore-eos makes both sides run all 32)
#   tools/llama_reference.py on the same prompt ids (float64, no KV cache)
# then compare_logits.py: the same 32 greedy tokens, and every step's
# logits within 1e-3 by max|app - ref| / max|ref|; then again with f16 KV
# caches (--set kv=f16). The GGUF is fetched
# once into BUILD/smollm (tests/gguf/fetch_smollm.sh, shared with the GGUF
# tests), the reference's dequantized tensors are cached beside WORK_DIR
# (llama_reference/), and the dequantization runs in the tokenizers+gguf
# venv (tokvenv.sh). $KILN_APP_CFLAGS is added to the
# app's build. Exit 0 on success, 1 on failure, 77 (ctest's skip) when the
# model or a Python (torch, the venv) cannot be had.
set -euo pipefail
export LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
kiln=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
base=$(dirname "$work")
prompt="The capital of France is"
ntok=32

/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
  { echo "reference: SKIP: Debian's python3-torch is not installed"; exit 77; }
py=$("$here/tokvenv.sh" "${KILN_TOKVENV:-$base/tokvenv}") ||
  { echo "reference: SKIP: no venv with tokenizers and gguf (offline?)"; exit 77; }
rc=0
gguf=$("$root/tests/gguf/fetch_smollm.sh" "$(cd "$base/.." && pwd)/smollm") || rc=$?
[ $rc = 0 ] || exit $rc
rm -rf "$work"
mkdir -p "$work"

"$kiln" compile "$root/examples/llama.lua" --weights "$gguf" --set ctx=128 -o "$work/smol.c"
# the tokenizer's tables are in the weights blob, not the .c (where they took 14,900 lines)
if grep -q 'smol_token_text\[.*\] *=' "$work/smol.c"; then
  echo "reference: FAIL the tokenizer's tables are literals in smol.c"
  exit 1
fi
cc -O2 -march=native -ffp-contract=fast -I"$work" -c "$work/smol.c" -o "$work/smol.o"
cc -c "$work/smol_weights.S" -I"$work" -o "$work/smol_weights.o"
cc -std=c11 -O2 -Wall -Wextra -Werror ${KILN_APP_CFLAGS:-} -I"$work" "$root/examples/generate.c" \
  "$work/smol.o" "$work/smol_weights.o" -lm -o "$work/generate"

"$work/generate" --ids --tokens $ntok --ignore-eos --dump-logits "$work/logits.f32" "$prompt" >"$work/ids.txt" 2>"$work/timing.txt"
cat "$work/timing.txt"
ids=$(head -n 1 "$work/ids.txt")
[ "$ids" = 504,3575,282,4649,314 ] || { echo "reference: FAIL the prompt's ids are $ids"; exit 1; }
/usr/bin/python3 "$root/tools/llama_reference.py" --gguf "$gguf" --cache "$base/llama_reference/smollm2" \
  --gguf-python "$py" --prompt-ids "$ids" --tokens $ntok --ignore-eos --out "$work/ref"
/usr/bin/python3 "$here/compare_logits.py" "$work/ids.txt" "$work/logits.f32" "$work/ref" 1e-3

# the same model with f16 KV caches (--set kv=f16: keys and values rounded
# to f16 as they are stored): the same tokens, logits still within 1e-3
# (measured: 8.9e-4 at worst, median 3.4e-4)
mkdir -p "$work/kvf16"
"$kiln" compile "$root/examples/llama.lua" --weights "$gguf" --set ctx=128 --set kv=f16 -o "$work/kvf16/smol.c"
cc -O2 -march=native -ffp-contract=fast -I"$work/kvf16" -c "$work/kvf16/smol.c" -o "$work/kvf16/smol.o"
cc -c "$work/kvf16/smol_weights.S" -I"$work/kvf16" -o "$work/kvf16/smol_weights.o"
cc -std=c11 -O2 ${KILN_APP_CFLAGS:-} -I"$work/kvf16" "$root/examples/generate.c" \
  "$work/kvf16/smol.o" "$work/kvf16/smol_weights.o" -lm -o "$work/kvf16/generate"
"$work/kvf16/generate" --ids --tokens $ntok --ignore-eos --dump-logits "$work/kvf16/logits.f32" "$prompt" \
  >"$work/kvf16/ids.txt" 2>/dev/null
echo "reference, f16 KV cache:"
/usr/bin/python3 "$here/compare_logits.py" "$work/kvf16/ids.txt" "$work/kvf16/logits.f32" "$work/ref" 1e-3
