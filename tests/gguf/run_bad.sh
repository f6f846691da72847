#!/usr/bin/env bash
# run_bad.sh KILN — bad GGUF input must fail cleanly (STYLE.md): exit status
# exactly 1, nothing on stdout, exactly one stderr line "kiln: ..." holding
# the expected text, and no file left in the output folder.
#
# Two sets:
#   files   make_bad.py's damaged copies of tiny_llama.gguf (and a few
#           written from scratch), each bound with --weights to
#           bind/model.lua; cases.txt gives each one's expected text
#   scripts bad_lua/NAME.lua, run from a fresh folder that also holds
#           tiny_llama.gguf, q6k.gguf and kquant.gguf; "-- expect: TEXT" lines (each must
#           be in the error, which must name NAME.lua:LINE:), "-- args: ARGS"
#           with @DIR for that folder
# Prints one line per case and "N passed, N failed"; exits 1 if any failed.
set -u
export LC_ALL=C
[ $# -eq 1 ] || { echo "usage: $0 KILN_BINARY" >&2; exit 2; }
kiln=$1
case $kiln in /*) ;; *) kiln=$PWD/$kiln ;; esac
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-gguf-bad.XXXXXX")
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/make_bad.py" "$here/tiny_llama.gguf" "$work/files" || exit 1

pass=0 fail=0
# verdict NAME DIR RC WANT...: checks DIR/stdout, DIR/stderr, DIR/out
verdict() {
  local name=$1 dir=$2 rc=$3 why="" first text
  shift 3
  first=$(head -n 1 "$dir/stderr")
  if [ "$rc" -eq 124 ]; then why="still running after 20 s"
  elif [ "$rc" -ne 1 ]; then why="exit status $rc, expected 1"
  elif [ -s "$dir/stdout" ]; then why="stdout is not empty"
  elif [ "$(wc -l <"$dir/stderr")" -ne 1 ]; then
    why="stderr has $(wc -l <"$dir/stderr") lines, expected 1: $(head -c 300 "$dir/stderr" | tr '\n' '|')"
  elif [ "${first#kiln: }" = "$first" ]; then why="stderr does not start with 'kiln: '"
  elif [ -n "$(ls -A "$dir/out")" ]; then why="left files behind: $(ls -A "$dir/out" | tr '\n' ' ')"
  else
    for text in "$@"; do
      [ "${first#*"$text"}" = "$first" ] && { why="lacks '$text'"; break; }
    done
  fi
  if [ -z "$why" ]; then
    echo "ok   $name: $first"
    pass=$((pass + 1))
  else
    echo "FAIL $name: $why"
    echo "     stderr: $(head -c 400 "$dir/stderr" | tr '\n' '|')"
    fail=$((fail + 1))
  fi
}

while IFS="$(printf '\t')" read -r name want; do
  dir=$work/$name
  mkdir -p "$dir/out"
  rc=$( (cd "$dir/out" && timeout 20 "$kiln" compile "$here/bind/model.lua" \
          --weights "$work/files/$name.gguf" -o "$dir/out/model.c" >"$dir/stdout" 2>"$dir/stderr"
        echo $?) 2>/dev/null)
  verdict "$name" "$dir" "$rc" "$name.gguf: " "$want"
done <"$work/files/cases.txt"

for script in "$here"/bad_lua/*.lua; do
  name=$(basename "$script" .lua)
  dir=$work/lua_$name
  mkdir -p "$dir/out"
  cp "$script" "$here/tiny_llama.gguf" "$here/q6k.gguf" "$here/kquant.gguf" "$dir/"
  args=$(sed -n 's/^-- args: //p' "$script")
  args=${args//@DIR/$dir}
  wants=()
  while IFS= read -r w; do wants+=("$w"); done < <(sed -n 's/^-- expect: //p' "$script")
  # shellcheck disable=SC2086 # the arguments are words
  rc=$( (cd "$dir/out" && timeout 20 "$kiln" compile "../$name.lua" $args -o "$dir/out/model.c" \
          >"$dir/stdout" 2>"$dir/stderr"; echo $?) 2>/dev/null)
  if [ ${#wants[@]} -eq 0 ]; then
    echo "FAIL lua_$name: no '-- expect:' line"; fail=$((fail + 1)); continue
  fi
  verdict "lua_$name" "$dir" "$rc" "$name.lua:" "${wants[@]}"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
