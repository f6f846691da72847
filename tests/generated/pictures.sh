#!/usr/bin/env bash
# pictures.sh KILN MODEL... — every `kiln dot` graph (as imported and after
# each pass) is accepted by Graphviz, and every `kiln info --memory-svg`
# picture is well-formed XML; `kiln info --json` is valid JSON when python3
# is around to check it.
set -u
kiln=$1; shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
check() { # description, command...
  local what=$1; shift
  if "$@" > "$work/out" 2>&1; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $what: $(head -3 "$work/out")"; fi
}
passes=$("$kiln" passes | awk '{print $1}')
for model in "$@"; do
  name=$(basename "$(dirname "$model")")
  check "$name dot (imported)" sh -c "'$kiln' dot '$model' -o '$work/g.dot' && dot -Tsvg '$work/g.dot' -o /dev/null"
  for p in $passes; do
    check "$name dot --after=$p" sh -c "'$kiln' dot '$model' --after=$p -o '$work/g.dot' && dot -Tsvg '$work/g.dot' -o /dev/null"
  done
  check "$name memory svg" sh -c "'$kiln' info '$model' --memory-svg '$work/m.svg' > /dev/null && xmllint --noout '$work/m.svg'"
  if command -v python3 > /dev/null; then
    check "$name info --json" sh -c "'$kiln' info '$model' --json | python3 -m json.tool > /dev/null"
  fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
