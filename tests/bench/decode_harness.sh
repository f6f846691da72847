#!/usr/bin/env bash
# decode_harness.sh — bench/decode.py (the decode benchmark's timing and
# table) runs end to end on stand-ins: a fake kiln generate that prints
# generate.c's `timing:` line and a fake llama-bench that prints its jsonl
# records, so the commands it builds, the parsing, the interleaving and the
# table are checked in a second, without the model, a llama.cpp build or any
# timing (the real benchmark, bench/decode.sh, is not a test). Needs python3
# and /usr/bin/time.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ -x /usr/bin/time ] || { echo "skip: /usr/bin/time is missing" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# generate --ids --prompt-ids IDS --tokens N: N-1 steps of 10 ms, + 1 ms per 100 positions
cat >"$tmp/generate" <<'EOF'
#!/usr/bin/env bash
[ "$1 $2 $4" = "--ids --prompt-ids --tokens" ] || { echo "generate: bad arguments: $*" >&2; exit 1; }
n=$(tr , '\n' <<<"$3" | wc -l) steps=$(($5 - 1))
echo "$3"
echo "timing: prefill_tokens=$n prefill_ms=64.000 prefill_tok_s=$((n * 1000 / 64)).0" \
  "decode_tokens=$steps decode_ms=$((steps * (10 + n / 100))).000 decode_tok_s=$((1000 / (10 + n / 100))).0" >&2
EOF
# llama-bench -m G -t T -o jsonl -p P -n N [-d D,...] -r 1: one record per depth
cat >"$tmp/llama-bench" <<'EOF'
#!/usr/bin/env bash
p=0 n=0 d=0
while [ $# -gt 0 ]; do case $1 in -p) p=$2 ;; -n) n=$2 ;; -d) d=$2 ;; esac; shift; done
for depth in ${d//,/ }; do
  ns=$(( p > 0 ? 500000000 : n * (20 + depth / 100) * 1000000 ))
  echo "{\"build_commit\": \"fake\", \"cpu_info\": \"none\", \"n_prompt\": $p, \"n_gen\": $n," \
       "\"n_depth\": $depth, \"avg_ns\": $ns, \"avg_ts\": $(( (p + n) * 1000000000 / ns ))," \
       "\"samples_ns\": [ $ns ]}"
done
EOF
chmod +x "$tmp/generate" "$tmp/llama-bench"
out=$(python3 "$root/bench/decode.py" --gguf "$tmp/x.gguf" --llama-bench "$tmp/llama-bench" \
  --kiln 1="$tmp/generate" --kiln 2="$tmp/generate" --bound 1=1048576 --rounds 2 2>/dev/null)
echo "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
# kiln: prefill 64 tokens in 64 ms = 1000 tok/s; 128 steps of 10 ms = 100 tok/s;
# @16: prompt 12, 10 ms a step; @480: prompt 476, 14 ms. llama.cpp: pp 128 tok/s,
# tg at depth 64 50 tok/s, 20 and 24 ms. The ratios follow.
grep -Eq '^\| kiln \| 1 \| 1000\.0 \| 100\.0 \| 10\.00 \| 14\.00 \| 1\.40 \| [0-9.]+ \| 1\.0 \|$' <<<"$out" ||
  fail "kiln's 1-thread row"
grep -Eq '^\| llama\.cpp \| 2 \| 128\.0 \| 50\.0 \| 20\.00 \| 24\.00 \| 1\.20 \| [0-9.]+ \| — \|$' <<<"$out" ||
  fail "llama.cpp's 2-thread row"
grep -Eq '^\| kiln/llama\.cpp \| 1 \| 7\.81 \| 2\.00 \| 0\.50 \| 0\.58 \|  \| [0-9.]+ \|  \|$' <<<"$out" ||
  fail "the 1-thread ratios"
echo "ok: decode.py's table from stand-in programs"
