#!/usr/bin/env bash
# run_qwen2.sh KILN WORK_DIR — compiler/arch/qwen2.lua against a float64
# reference of our own (issue 23): for the tied and the untied fixture of
# tools/make_qwen2_gguf.py (tiny_qwen2*.gguf: Q/K/V biases, NEOX rope with
# base 1e6, mixed F16/Q8_0/Q4_0/Q4_1 matrices),
#   kiln compile FILE.gguf --set ctx=32 --set prefill=8   (the bundled description)
#   cc -O1 the model (weights inline; its kernels' plain C bodies) and examples/generate.c
#   generate --ids --prompt-ids 1,40,71,90,5 --tokens 16 --ignore-eos --dump-logits
# then compare_logits.py against ref/NAME/ (tools/qwen2_reference.py's
# output on the same file and prompt, committed: it needs PyPI's gguf):
# the same 16 greedy tokens and every step's logits within 1e-5 by
# max|app - ref| / max|ref| (measured: 6.8e-7 tied, 5.4e-7 untied; the
# reference's smallest top-2 gap is 1.7% of the largest logit, so no
# near-tie decides a token). $KILN_APP_CFLAGS is added to the app's build.
# To remake the reference: PY tools/qwen2_reference.py --gguf FILE
#   --prompt-ids 1,40,71,90,5 --tokens 16 --out tests/gguf/arch/ref/NAME
set -euo pipefail
kiln=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
rm -rf "$work"
mkdir -p "$work"
rc=0
for name in tiny_qwen2 tiny_qwen2_untied; do
  d=$work/$name
  mkdir -p "$d"
  "$kiln" compile "$here/$name.gguf" --set ctx=32 --set prefill=8 -q -o "$d/smol.c"
  cc -std=c11 -O1 -Wall -Wextra -Werror ${KILN_APP_CFLAGS:-} -I"$d" -DKILN_MODEL_BLOB=0 \
    "$root/examples/generate.c" "$d/smol.c" -lm -o "$d/generate"
  "$d/generate" --ids --prompt-ids 1,40,71,90,5 --tokens 16 --ignore-eos --dump-logits "$d/logits.f32" \
    >"$d/ids.txt" 2>/dev/null
  echo "$name:"
  /usr/bin/python3 "$root/tests/generate/compare_logits.py" "$d/ids.txt" "$d/logits.f32" "$here/ref/$name" 1e-5 || rc=1
done
exit $rc
