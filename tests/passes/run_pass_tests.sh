#!/usr/bin/env bash
# run_pass_tests.sh KILN [TEST.kir...] — text-in, text-out pass tests.
#
# Each tests/passes/*.kir is an IR file with directives in comments:
#   # RUN: <kiln opt arguments>      e.g. --passes=fold   (required, once)
#   # EXPECT:                        the rest of the file, each line with its
#   #   ...                          leading "# " removed, must equal the
#                                    output exactly
#   # CHECK: text                    or: these texts must appear in the output,
#                                    in this order (FileCheck-style subset)
#   # ERROR: text                    or: kiln must fail with this in its message
# Ends with "N passed, N failed".
set -u
kiln=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=("$here"/*.kir)
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in "${tests[@]}"; do
  name=$(basename "$t" .kir)
  args=$(sed -n 's/^# RUN: *//p' "$t" | head -1)
  if [ -z "$args" ]; then echo "FAIL $name: no '# RUN:' line"; fail=$((fail+1)); continue; fi
  # shellcheck disable=SC2086
  "$kiln" opt "$t" $args > "$tmp/out" 2> "$tmp/err"; rc=$?
  why=""
  if grep -q '^# ERROR:' "$t"; then
    want=$(sed -n 's/^# ERROR: *//p' "$t" | head -1)
    [ $rc = 1 ] || why="expected exit 1, got $rc"
    [ -z "$why" ] && ! grep -qF -- "$want" "$tmp/err" && why="error '$(cat "$tmp/err")' lacks '$want'"
  elif [ $rc != 0 ]; then
    why="kiln failed: $(cat "$tmp/err")"
  elif grep -q '^# EXPECT:' "$t"; then
    sed -n '/^# EXPECT:/,$p' "$t" | tail -n +2 | sed -E 's/^# ?//' > "$tmp/want"
    diff -u "$tmp/want" "$tmp/out" > "$tmp/diff" || why="output differs:
$(cat "$tmp/diff")"
  else
    # CHECK lines in order: each must match at or after the previous match
    line=0
    while IFS= read -r want; do
      hit=$(tail -n +$((line + 1)) "$tmp/out" | grep -nF -- "$want" | head -1 | cut -d: -f1)
      if [ -z "$hit" ]; then why="CHECK not found (in order): $want"; break; fi
      line=$((line + hit))
    done < <(sed -n 's/^# CHECK: *//p' "$t")
  fi
  if [ -z "$why" ]; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name: $why"; fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
