#!/usr/bin/env bash
# verbose.sh KILN — what `kiln -v` says about attention, on the pass tests
# tests/passes/fuse_attention_*.kir: each `# FUSED: TEXT` line must come out
# as a "fuse: TEXT <- ..." line, each `# REASON: TEXT` in an "attention not
# fused" line; a file with FUSED lines may report no unfused attention and
# one with REASON lines no fused one. Ends with "N passed, N failed".
set -u
kiln=$1
here=$(cd "$(dirname "$0")/../passes" && pwd)
pass=0 fail=0
for t in "$here"/fuse_attention_*.kir; do
  name=$(basename "$t" .kir)
  args=$(sed -n 's/^# RUN: *//p' "$t" | head -1)
  # shellcheck disable=SC2086
  err=$("$kiln" opt "$t" $args -v 2>&1 >/dev/null)
  why=""
  while IFS= read -r want; do
    grep -qF -- "fuse: $want <- " <<<"$err" || why="no line 'fuse: $want <- ...'"
  done < <(sed -n 's/^# FUSED: *//p' "$t")
  while IFS= read -r want; do
    grep -qF -- "$want" <<<"$err" || why="no reason '$want'"
  done < <(sed -n 's/^# REASON: *//p' "$t")
  if grep -q '^# FUSED:' "$t" && grep -q 'attention not fused' <<<"$err"; then why="unexpected: $err"; fi
  if grep -q '^# REASON:' "$t" && grep -q 'fuse: attention{' <<<"$err"; then why="fused: $err"; fi
  if ! grep -q '^# \(FUSED\|REASON\):' "$t"; then why="no FUSED or REASON line"; fi
  if [ -z "$why" ]; then pass=$((pass + 1)); echo "ok   $name"
  else fail=$((fail + 1)); echo "FAIL $name: $why"; fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
