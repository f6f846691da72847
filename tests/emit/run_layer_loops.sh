#!/usr/bin/env bash
# run_layer_loops.sh KILN WORK_DIR — repeated layers as loops (compiler/emit/emit_forward.c,
# README "The generated API"):
#   1. the generated C of ONNX fixtures with layer loops (tests/hf/llama: inline
#      weights through a pointer table; tests/models/transformer_ed) gives
#      outputs bit-identical to the same model compiled --unroll-layers
#      (kiln check --keep leaves each build's out*.bin);
#   2. examples/llama.lua (a decoder with a KV cache, inline weights): one loop
#      per entry point over state->blk[l] and blk[l], each forward function
#      at most 80 lines, no `(void)p_` lines; --unroll-layers has no loop;
#      both build with gcc (and clang when installed) -Wall -Wextra -Wshadow
#      -Werror;
#   3. encoders: examples/bert.lua and transformer.lua loop every layer, the
#      first and the last too (compiler/passes/equal_layers.c); the real
#      MiniLM when tests/minilm has fetched it into BUILD/minilm: its forward
#      at most 80 lines, all six layers one loop, outputs bit-identical with
#      --unroll-layers;
#   4. the real SmolLM2 when tests/gguf/fetch_smollm.sh has fetched it into
#      BUILD/smollm (skipped otherwise): each entry's forward at most 200
#      lines, and 8 greedy tokens' logits bit-identical between the looped
#      and the unrolled build (examples/generate.c --dump-logits).
# Exit 0 on success, 1 on failure.
set -euo pipefail
kiln=$1 work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"
fail=0
bad() { echo "layer_loops: FAIL $*"; fail=1; }

# 1: loops vs unrolled, bit for bit
for d in tests/hf/llama tests/models/transformer_ed; do
  dirs=()
  for flag in "" --unroll-layers; do
    kept=$("$kiln" check -q --keep $flag "$root/$d" | sed -n 's/^  build folder kept: //p')
    [ -d "$kept" ] || { bad "$d: kiln check $flag kept no build folder"; continue 2; }
    dirs+=("$kept")
  done
  grep -q '^ */\* layers [0-9]* \.\. ' "${dirs[0]}/model.c" || bad "$d: no layer loop in the generated C"
  if grep -q '^ */\* layers [0-9]* \.\. ' "${dirs[1]}/model.c"; then bad "$d: --unroll-layers wrote a loop"; fi
  n=0
  for f in "${dirs[0]}"/out*.bin; do
    n=$((n + 1))
    cmp -s "$f" "${dirs[1]}/$(basename "$f")" || bad "$d: $(basename "$f") differs between loops and unrolled layers"
  done
  [ $n -gt 0 ] || bad "$d: no outputs kept"
  echo "layer_loops: $d: $n outputs bit-identical with and without layer loops"
  rm -rf "${dirs[@]}"
done

# 2: the decoder example's shape
fwd_lines() { awk -v f="$2" '$0 ~ "^static void " f "\\(" {on = 1} on {n++} on && /^}/ {print n; exit}' "$1"; }
"$kiln" compile -q "$root/examples/llama.lua" -o "$work/llama.c"
"$kiln" compile -q --unroll-layers "$root/examples/llama.lua" -o "$work/unrolled/llama.c"
for entry in prefill step; do
  n=$(fwd_lines "$work/llama.c" "llama_${entry}_forward")
  [ -n "$n" ] && [ "$n" -le 80 ] || bad "llama.lua: llama_${entry}_forward is ${n:-?} lines (at most 80)"
  echo "layer_loops: llama.lua: llama_${entry}_forward $n lines (unrolled: $(fwd_lines "$work/unrolled/llama.c" "llama_${entry}_forward"))"
done
[ "$(grep -c '^  for (int l = 0; l < [0-9]*; l++) {' "$work/llama.c")" = 2 ] || bad "llama.lua: not one layer loop per entry point"
grep -q 'state->blk\[l\]\.k_cache' "$work/llama.c" || bad "llama.lua: the loop does not read state->blk[l].k_cache"
grep -q '^static const struct llama_blk_weights {' "$work/llama.c" || bad "llama.lua: no per-layer weight table"
if grep -q '(void)p_' "$work/llama.c"; then bad "llama.lua: (void)p_ lines"; fi
if grep -q '^ */\* layers [0-9]* \.\. ' "$work/unrolled/llama.c"; then bad "llama.lua: --unroll-layers wrote a loop"; fi
for cc in gcc clang; do
  command -v $cc >/dev/null || continue
  for f in "$work/llama.c" "$work/unrolled/llama.c"; do
    $cc -std=c99 -O1 -Wall -Wextra -Wshadow -Werror -I"$(dirname "$f")" -c "$f" -o "$f.$cc.o" ||
      bad "$cc does not build $f cleanly"
  done
done

# 3: encoders: every layer in the loop, the first (a Lua model builds the mask
# inside it) and the last (it writes the graph output) too
"$kiln" compile -q "$root/examples/bert.lua" --set layers=3 --set seq=16 -o "$work/bert.c"
grep -q '^  /\* layers 0 \.\. 2: ' "$work/bert.c" || bad "bert.lua: layers 0 .. 2 are not one loop"
grep -q '^  identity_0(.*p_last_hidden_state); ' "$work/bert.c" || bad "bert.lua: last_hidden_state not copied out after the loop"
"$kiln" compile -q "$root/examples/transformer.lua" --set layers=3 -o "$work/transformer.c"
[ "$(grep -c '^  /\* layers 0 \.\. 2: ' "$work/transformer.c")" = 2 ] ||
  bad "transformer.lua: the encoder's and the decoder's layers 0 .. 2 are not one loop each"
for cc in gcc clang; do # GELU's vector erf (kiln_rt.h) nests the vector exp: no shadowing
  command -v $cc >/dev/null || continue
  $cc -std=c99 -O1 -march=native -Wall -Wextra -Wshadow -Werror -I"$work" -c "$work/bert.c" -o "$work/bert.$cc.o" ||
    bad "$cc does not build bert.lua's C cleanly"
done
echo "layer_loops: bert.lua and transformer.lua: every layer in one loop"
# the real MiniLM (tests/minilm fetches it into BUILD/minilm; skipped otherwise):
# all six layers one loop, the forward at most 80 lines, outputs bit-identical
minilm="$(cd "$(dirname "$work")/.." && pwd)/minilm/onnx"
if [ -f "$minilm/model.onnx" ]; then
  dirs=()
  for flag in "" --unroll-layers; do
    kept=$("$kiln" check -q --keep $flag "$minilm" | sed -n 's/^  build folder kept: //p')
    [ -d "$kept" ] || { bad "MiniLM: kiln check $flag kept no build folder"; break; }
    dirs+=("$kept")
  done
  if [ ${#dirs[@]} = 2 ]; then
    n=$(fwd_lines "${dirs[0]}/model.c" "model_forward")
    [ -n "$n" ] && [ "$n" -le 80 ] || bad "MiniLM: model_forward is ${n:-?} lines (at most 80)"
    grep -q '^  /\* layers 0 \.\. 5: ' "${dirs[0]}/model.c" || bad "MiniLM: layers 0 .. 5 are not one loop"
    for f in "${dirs[0]}"/out*.bin; do
      cmp -s "$f" "${dirs[1]}/$(basename "$f")" || bad "MiniLM: $(basename "$f") differs between loops and unrolled layers"
    done
    echo "layer_loops: MiniLM: model_forward $n lines (unrolled: $(fwd_lines "${dirs[1]}/model.c" "model_forward")), outputs bit-identical"
    rm -rf "${dirs[@]}"
  fi
else
  echo "layer_loops: MiniLM not fetched: its part skipped"
fi

# 4: SmolLM2, when fetched
gguf="$(dirname "$work")/../smollm/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$gguf" ] || gguf="$(cd "$(dirname "$work")/.." && pwd)/smollm/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -f "$gguf" ]; then
  logits=()
  for flag in "" --unroll-layers; do
    d="$work/smol${flag:+-unrolled}"
    mkdir -p "$d"
    "$kiln" compile -q $flag "$root/examples/llama.lua" --weights "$gguf" --set ctx=64 -o "$d/smol.c"
    cc -O2 -march=native -ffp-contract=fast -I"$d" -c "$d/smol.c" -o "$d/smol.o"
    cc -c "$d/smol_weights.S" -I"$d" -o "$d/smol_weights.o"
    cc -std=c11 -O2 -I"$d" "$root/examples/generate.c" "$d/smol.o" "$d/smol_weights.o" -lm -o "$d/generate"
    "$d/generate" --ids --tokens 8 --ignore-eos --dump-logits "$d/logits.f32" "The capital of France is" >/dev/null 2>&1
    logits+=("$d/logits.f32")
    if [ -z "$flag" ]; then
      for entry in prefill step; do
        n=$(fwd_lines "$d/smol.c" "smol_${entry}_forward")
        [ -n "$n" ] && [ "$n" -le 200 ] || bad "SmolLM2: smol_${entry}_forward is ${n:-?} lines (at most 200)"
        echo "layer_loops: SmolLM2: smol_${entry}_forward $n lines"
      done
    fi
  done
  cmp -s "${logits[0]}" "${logits[1]}" || bad "SmolLM2: logits differ between loops and unrolled layers"
  echo "layer_loops: SmolLM2: 8 tokens' logits bit-identical with and without layer loops"
else
  echo "layer_loops: SmolLM2 not fetched: its part skipped"
fi
[ $fail = 0 ] && echo "layer_loops: ok"
exit $fail
