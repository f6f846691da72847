#!/usr/bin/env bash
# run_bad.sh KILN — bad Lua scripts must fail cleanly: for each
# tests/lua/bad/NAME.lua, `kiln compile NAME.lua -o OUT/model.c` must exit
# with status 1, print nothing on stdout and exactly one stderr line
# "kiln: ..." that names the script's file and line ("NAME.lua:N:") and
# holds the case's expected text, and leave OUT empty.
#
# A case's header comments:
#   -- expect: TEXT   a substring the error line must hold ("NAME.lua:N: what");
#                     several such lines: it must hold each
#   -- args: ARGS     extra kiln arguments; @DIR is the folder the case runs in
# Each case runs from its own copy in a fresh folder that also holds
# small.safetensors (bad/make_weights.py), so weights("small.safetensors")
# and --weights @DIR/small.safetensors both find it.
# A case gets 20 s (timeout): a hang is a failure, not a stuck suite.
# Prints one line per case and "N passed, N failed"; exits 1 if any failed.
set -u
export LC_ALL=C

if [ $# -ne 1 ]; then
  echo "usage: $0 KILN_BINARY" >&2
  exit 2
fi
kiln=$1
case $kiln in /*) ;; *) kiln=$PWD/$kiln ;; esac
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-lua-bad.XXXXXX")
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/bad/make_weights.py" "$work" || exit 1

# missing_texts LINE WANT: the first line of WANT that LINE does not hold
missing_texts() {
  local line=$1 text
  while IFS= read -r text; do
    [ "${line#*"$text"}" = "$line" ] && { echo "$text"; return; }
  done <<<"$2"
}

# why_bad NAME: runs one case; prints nothing if it behaved, else why not
why_bad() {
  local name=$1 dir=$work/$1
  mkdir -p "$dir/out"
  cp "$here/bad/$name.lua" "$work/small.safetensors" "$dir/"
  local want args rc
  want=$(sed -n 's/^-- expect: //p' "$dir/$name.lua")
  args=$(sed -n 's/^-- args: //p' "$dir/$name.lua")
  args=${args//@DIR/$dir}
  # shellcheck disable=SC2086 # the arguments are words
  rc=$( (cd "$dir/out" && timeout 20 "$kiln" compile "../$name.lua" $args -o "$dir/out/model.c" \
          >"$dir/stdout" 2>"$dir/stderr"; echo $?) 2>/dev/null)
  local first
  first=$(head -n 1 "$dir/stderr")
  if [ -z "$want" ]; then
    echo "the case has no '-- expect:' line"
  elif [ "$rc" -eq 124 ]; then
    echo "still running after 20 s (a hang?)"
  elif [ "$rc" -ne 1 ]; then
    echo "exit status $rc, expected 1"
  elif [ -s "$dir/stdout" ]; then
    echo "stdout is not empty"
  elif [ "$(wc -l <"$dir/stderr")" -ne 1 ]; then
    echo "stderr has $(wc -l <"$dir/stderr") lines, expected 1: $(head -c 300 "$dir/stderr" | tr '\n' '|')"
  elif [ "${first#kiln: }" = "$first" ]; then
    echo "stderr does not start with 'kiln: ': $first"
  elif ! grep -Eq "$name\.lua:[0-9]+: " <<<"$first"; then
    echo "no $name.lua:LINE: in: $first"
  elif [ -n "$(missing_texts "$first" "$want")" ]; then
    echo "lacks '$(missing_texts "$first" "$want")': $first"
  elif [ -n "$(ls -A "$dir/out")" ]; then
    echo "left files behind: $(ls -A "$dir/out" | tr '\n' ' ')"
  fi
}

pass=0 fail=0
for script in "$here"/bad/*.lua; do
  name=$(basename "$script" .lua)
  why=$(why_bad "$name")
  if [ -z "$why" ]; then
    echo "ok   $name: $(head -n 1 "$work/$name/stderr")"
    pass=$((pass + 1))
  else
    echo "FAIL $name: $why"
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
