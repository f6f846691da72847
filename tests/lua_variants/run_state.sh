#!/usr/bin/env bash
# run_state.sh KILN — models with state (state{} / state_update(), the IR's
# state inputs), without ONNX Runtime:
#   - kir/*.kir: states in the text IR (parse, print, plan, verifier);
#   - bad/*.lua: misused state{}, state_update() and nn variants give one
#     line "kiln: FILE:LINE: message" (the line the file's "-- ERROR:"
#     names), exit 1, and no output file;
#   - examples/transformer_xl.lua: every dump round-trips through .kir and
#     compiling the last one gives the same C (tests/generated/roundtrip.sh);
#   - the generated C and examples/xl_app.c build with -std=c99 -Wall
#     -Wextra -Werror and the app runs 4 segments, each one's guesses
#     differing (the memory moves on).
# Ends with "N passed, N failed".
set -uo pipefail
kiln=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# counts from a harness that ends with "N passed, N failed"
tally() {
  local line; line=$(tail -1 "$1")
  pass=$((pass + $(echo "$line" | awk '{print $1}'))); fail=$((fail + $(echo "$line" | awk '{print $3}')))
  grep FAIL "$1"
}

bash "$root/tests/passes/run_pass_tests.sh" "$kiln" "$here"/kir/*.kir >"$work/kir.log" 2>&1
tally "$work/kir.log"

for s in "$here"/bad/*.lua; do
  name=$(basename "$s" .lua)
  want=$(sed -n 's/^-- ERROR: //p' "$s")
  (cd "$here/bad" && "$kiln" compile "$name.lua" -o "$work/$name.c") 2>"$work/err"; rc=$?
  if [ $rc = 1 ] && [ "$(wc -l <"$work/err")" = 1 ] && [ "$(cat "$work/err")" = "kiln: $want" ] &&
     [ ! -e "$work/$name.c" ] && [ ! -e "$work/$name.h" ]; then
    ok "bad/$name"
  else
    bad "bad/$name: exit $rc, said '$(cat "$work/err")'; expected 'kiln: $want'"
  fi
done

bash "$root/tests/generated/roundtrip.sh" "$kiln" "$root/examples/transformer_xl.lua" >"$work/rt.log" 2>&1
tally "$work/rt.log"

mkdir -p "$work/xl"
if "$kiln" compile "$root/examples/transformer_xl.lua" -o "$work/xl/transformer_xl.c" &&
   cc -std=c99 -O2 -Wall -Wextra -Werror -I"$work/xl" "$root/examples/xl_app.c" \
      "$work/xl/transformer_xl.c" $(ls "$work"/xl/*_weights.S 2>/dev/null) -lm -o "$work/xl/xl_app" &&
   "$work/xl/xl_app" >"$work/xl/out" && [ "$(cut -d: -f2 "$work/xl/out" | sort -u | wc -l)" = 4 ]; then
  ok "xl_app: 4 segments, memory carried by transformer_xl_state"
else
  bad "xl_app: build or run ($(cat "$work/xl/out" 2>/dev/null | head -2))"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
