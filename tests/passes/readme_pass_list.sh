#!/usr/bin/env bash
# readme_pass_list.sh KILN README.md — README's pass list is `kiln passes`
# verbatim: the first ``` block after the line that says so, which is
# generated from pipeline.c's descriptions, so the two cannot drift apart.
set -u
kiln=$1 readme=$2
want=$(awk '/as `kiln passes` prints them/ {on = 1} on && /^```/ {n++; next} on && n == 1' "$readme")
got=$("$kiln" passes)
if [ "$want" != "$got" ]; then
  echo "FAIL: README's pass list differs from kiln passes:"
  diff <(echo "$want") <(echo "$got")
  exit 1
fi
echo "ok   README pass list = kiln passes"
