#!/usr/bin/env bash
# run_bad.sh KILN — kiln must reject every bad input cleanly (STYLE.md,
# "Errors, three kinds"): exit status exactly 1, nothing on stdout, exactly
# one stderr line "kiln: ..." holding the expected text, and no file left in
# the output folder (no .c, .h, kiln_rt.h or temp file).
#
# Cases are tests/bad/NAME.expect (written by tools/make_bad_models.py):
#   line 1   kiln's arguments; @OUT = an output .c path in a fresh folder,
#            any other @ = the path of tests/bad/NAME.onnx
#   line 2   a substring the error line must contain
#   line 3+  "also: TEXT" — an accepted alternative (only for ops that are
#            still placeholders)
# Prints one line per case and "N passed, N failed"; exits 1 if any failed.
set -u
export LC_ALL=C

if [ $# -ne 1 ]; then
  echo "usage: $0 KILN_BINARY" >&2
  exit 2
fi
kiln=$1
case $kiln in /*) ;; *) kiln=$PWD/$kiln ;; esac
if [ ! -x "$kiln" ]; then
  echo "run_bad.sh: '$kiln' is not an executable" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bad.XXXXXX")
trap 'rm -rf "$work"' EXIT

pass=0
fail=0

# check_case NAME: runs one case, prints "ok NAME" or "FAIL NAME: why"
check_case() {
  local name=$1 expect=$here/$1.expect model=$here/$1.onnx
  local args want line arg
  local -a alts=() argv=()
  local -
  set -f # the arguments are words, never globs
  { IFS= read -r args; IFS= read -r want
    while IFS= read -r line; do
      case $line in "also: "*) alts+=("${line#also: }") ;; esac
    done; } <"$expect"
  local dir=$work/$name
  mkdir -p "$dir/out"
  local out=$dir/out/out.c
  # split on blanks (arguments hold no spaces), then substitute
  for arg in $args; do
    arg=${arg//@OUT/"$out"}
    argv+=("${arg//@/"$model"}")
  done
  # the echo keeps the subshell from exec'ing kiln, so the shell's own
  # "Segmentation fault" notice goes to /dev/null, not into the report
  local rc
  rc=$( (cd "$dir/out" && "$kiln" "${argv[@]}" >"$dir/stdout" 2>"$dir/stderr"; echo $?) 2>/dev/null)
  local nlines first
  nlines=$(wc -l <"$dir/stderr")
  first=$(head -n 1 "$dir/stderr")
  local why=""
  if [ "$rc" -ne 1 ]; then
    why="exit status $rc, expected 1"
    [ "$rc" -gt 128 ] && why="$why (killed by signal $((rc - 128)))"
  elif [ -s "$dir/stdout" ]; then
    why="stdout is not empty: $(head -c 200 "$dir/stdout" | tr '\n' ' ')"
  elif [ "$nlines" -ne 1 ] || [ "$(wc -c <"$dir/stderr")" -ne $((${#first} + 1)) ]; then
    why="stderr has $nlines lines, expected exactly 1"
  elif [ "${first#kiln: }" = "$first" ]; then
    why="stderr does not start with 'kiln: '"
  else
    local found=0 s
    for s in "$want" ${alts[@]+"${alts[@]}"}; do
      case $first in *"$s"*) found=1 ;; esac
    done
    [ $found -eq 1 ] || why="message lacks '$want'"
  fi
  if [ -z "$why" ]; then
    local left
    left=$(cd "$dir/out" && find . -mindepth 1 | sort | tr '\n' ' ')
    [ -n "$left" ] && why="left files behind: $left"
  fi
  if [ -z "$why" ]; then
    echo "ok   $name"
    return 0
  fi
  echo "FAIL $name: $why"
  [ -s "$dir/stderr" ] && echo "     stderr: $(head -c 400 "$dir/stderr" | tr '\n' '|')"
  return 1
}

for expect in "$here"/*.expect; do
  [ -e "$expect" ] || continue
  name=$(basename "$expect" .expect)
  if check_case "$name"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
