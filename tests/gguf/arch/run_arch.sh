#!/usr/bin/env bash
# run_arch.sh KILN WORK_DIR — GGUF files as models (compiler/lua/arch.c,
# kiln info FILE.gguf; issue 23):
#   - kiln compile tiny_llama.gguf writes the same C and header as kiln
#     compile examples/llama.lua --weights tiny_llama.gguf (the same
#     --set), once the description's and the model's names are made equal
#     (the bundled description is named arch/llama.lua in comments);
#   - refusals, each exit 1 with one "kiln: " line holding the expected
#     words and no file written: an architecture kiln has no description
#     for (unknown_arch.gguf), a description given a GGUF of another
#     architecture (llama.lua + a qwen2 file, qwen2.lua + a llama file,
#     llama.lua + the unknown one), --weights beside a GGUF model;
#   - kiln info on a GGUF: architecture, hyperparameters, tensor types
#     (-v: each tensor), tokenizer, BOS/EOS, chat template; then the
#     compiled model's report; --json parses; an unknown architecture
#     gets the file's part only, exit 0.
# Prints one line per check and "N passed, N failed"; exit 1 on a failure.
set -uo pipefail
export LC_ALL=C
kiln=$1 work=$2
case $kiln in /*) ;; *) kiln=$PWD/$kiln ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
llama=$root/tests/gguf/tiny_llama.gguf qwen=$here/tiny_qwen2.gguf unknown=$here/unknown_arch.gguf
rm -rf "$work" && mkdir -p "$work"
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# --- compile FILE.gguf == compile examples/llama.lua --weights FILE.gguf ------
mkdir -p "$work/gguf" "$work/lua"
"$kiln" compile "$llama" --set ctx=32 --set prefill=8 -q -o "$work/gguf/model.c" &&
  "$kiln" compile "$root/examples/llama.lua" --weights "$llama" --set ctx=32 --set prefill=8 -q -o "$work/lua/model.c" ||
  bad "compile tiny_llama.gguf / llama.lua --weights tiny_llama.gguf"
same=1
for f in model.c model.h; do
  sed -e "s#$root/examples/llama.lua#DESCRIPTION#g" "$work/lua/$f" >"$work/lua/$f.norm"
  sed -e "s#from $llama\. Do not edit#from DESCRIPTION. Do not edit#" -e "s#arch/llama.lua#DESCRIPTION#g" \
    "$work/gguf/$f" >"$work/gguf/$f.norm"
  cmp -s "$work/lua/$f.norm" "$work/gguf/$f.norm" || { same=0; diff "$work/lua/$f.norm" "$work/gguf/$f.norm" | head -5; }
done
lines=$(wc -l <"$work/gguf/model.c")
[ $same = 1 ] && [ "$lines" -gt 1000 ] && ok "kiln compile tiny_llama.gguf: the C of llama.lua --weights tiny_llama.gguf ($lines lines)" ||
  bad "kiln compile tiny_llama.gguf differs from llama.lua --weights tiny_llama.gguf"

# --- refusals -------------------------------------------------------------------
# refused NAME WORDS... -- KILN ARGS...: exit 1, one "kiln: " line with every word, no file in out/
refused() {
  local name=$1 words=() d=$work/refused/$1
  shift
  while [ "$1" != -- ]; do words+=("$1"); shift; done
  shift
  mkdir -p "$d/out"
  (cd "$d/out" && "$kiln" "$@" >"$d/stdout" 2>"$d/stderr"); local rc=$? why=""
  local first; first=$(head -n 1 "$d/stderr")
  if [ $rc -ne 1 ]; then why="exit status $rc, expected 1"
  elif [ -s "$d/stdout" ] || [ "$(wc -l <"$d/stderr")" -ne 1 ] || [ "${first#kiln: }" = "$first" ]; then
    why="expected one 'kiln: ' line on stderr, nothing on stdout: $(head -c 300 "$d/stderr" | tr '\n' '|')"
  elif [ -n "$(ls -A "$d/out")" ]; then why="left $(ls -A "$d/out" | tr '\n' ' ')"
  else
    for w in "${words[@]}"; do
      [ "${first#*"$w"}" = "$first" ] && { why="lacks '$w': $first"; break; }
    done
  fi
  [ -z "$why" ] && ok "$name: $first" || bad "$name: $why"
}
refused unknown_arch "unknown_arch.gguf" "general.architecture is 'kiln-test-unknown'" "no description" \
  "llama" "qwen2" -- compile "$unknown" -o x.c
refused unknown_arch_info_run "kiln-test-unknown" "no description" -- run "$unknown"
refused llama_lua_qwen2_file "examples/llama.lua:" "tiny_qwen2.gguf is a 'qwen2' model" \
  "this description is for 'llama'" "kiln compile" -- compile "$root/examples/llama.lua" --weights "$qwen" -o x.c
refused qwen2_lua_llama_file "qwen2.lua:" "tiny_llama.gguf is a 'llama' model" "this description is for 'qwen2'" \
  -- compile "$root/compiler/arch/qwen2.lua" --weights "$llama" -o x.c
refused llama_lua_unknown_file "is a 'kiln-test-unknown' model" "this description is for 'llama'" \
  "kiln has descriptions for" -- compile "$root/examples/llama.lua" --weights "$unknown" -o x.c
refused weights_beside_gguf "--weights" "is a GGUF file, which holds its weights" \
  -- compile "$qwen" --weights "$llama" -o x.c

# --- kiln info FILE.gguf ----------------------------------------------------------
# has FILE TEXT...: FILE holds every TEXT as a fixed string
has() {
  local f=$1 t
  shift
  for t in "$@"; do grep -qF -- "$t" "$f" || { echo "  not in $(basename "$f"): $t"; return 1; }; done
}
"$kiln" info "$llama" >"$work/info.txt" 2>"$work/info.err" &&
  has "$work/info.txt" "arch      llama, \"kiln tiny llama\"; kiln's description: arch/llama.lua" \
    "llama.block_count" "llama.rope.freq_base" "llama.attention.head_count_kv" \
    "tensors   21, 0.13 MB: Q8_0 4, F32 5, Q4_1 4, Q4_0 4, F16 4 (-v: each tensor)" \
    "tokenizer gpt2 (pre smollm), 256 tokens; BOS 1 \"<|im_start|>\", EOS 2 \"<|im_end|>\"; chat template: none" \
    "outputs   prefill.logits" "flops" &&
  ! grep -q "blk.0.attn_q.weight" "$work/info.txt" &&
  ok "info tiny_llama.gguf: architecture, hyperparameters, tensor types, tokenizer, then the model" ||
  bad "info tiny_llama.gguf: $(head -c 300 "$work/info.err")"
grep -E "^hparams   llama.block_count +2$" "$work/info.txt" >/dev/null && ok "info: llama.block_count 2" ||
  bad "info: no 'llama.block_count 2' line"
"$kiln" info "$qwen" -v >"$work/info_v.txt" 2>/dev/null &&
  has "$work/info_v.txt" "qwen2.rope.freq_base" "1000000" "blk.0.attn_q.bias" "blk.1.ffn_gate.weight" \
    "chat template: yes, 155 bytes" "BOS 0 \"<|endoftext|>\"" &&
  grep -E "^ +blk\.0\.attn_v\.weight +Q4_1 +\[32,64\] +1280 bytes$" "$work/info_v.txt" >/dev/null &&
  ok "info -v tiny_qwen2.gguf: each tensor with its type, shape and bytes" || bad "info -v tiny_qwen2.gguf"
"$kiln" info "$unknown" >"$work/info_u.txt" 2>"$work/info_u.err"
rc=$?
[ $rc = 0 ] && has "$work/info_u.txt" "arch      kiln-test-unknown" "kiln has no description for it (it has: " \
    "kiln-test-unknown.block_count" "tensors   0" &&
  ! grep -q "^model" "$work/info_u.txt" && ok "info unknown_arch.gguf: the file's part, exit 0" ||
  bad "info unknown_arch.gguf: exit $rc $(head -c 200 "$work/info_u.err")"
for f in "$qwen" "$unknown"; do
  "$kiln" info "$f" --json -v >"$work/info.json" 2>/dev/null &&
    /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
g = j["gguf"]
assert g["tokenizer"]["tokens"] == 256 and g["tokenizer"]["eos"] == {"id": 2, "text": "<|im_end|>"}, g
if g["architecture"] == "qwen2":
    assert g["hyperparameters"]["rope.freq_base"] == 1e6 and g["tensors"]["types"]["Q8_0"] == 5, g
    assert len(g["tensors"]["list"]) == 26 and g["description"] == "arch/qwen2.lua" and "flops" in j, j.keys()
else:
    assert g["description"] is None and "flops" not in j, j.keys()
' "$work/info.json" && ok "info --json $(basename "$f")" || bad "info --json $(basename "$f")"
done

echo "$pass passed, $fail failed"
[ $fail = 0 ]
