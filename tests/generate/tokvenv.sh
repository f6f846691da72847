#!/usr/bin/env bash
# tokvenv.sh DIR — make (once) and name a venv at DIR with PyPI tokenizers
# and gguf (numpy comes with gguf), for the generate tests' Python side:
# Hugging Face's tokenizer as the reference, and reading GGUF files.
#   py=$(tests/generate/tokvenv.sh build/tokvenv) || exit 77
# Prints the venv's python; exits 1 with a message when it cannot be made
# (offline, python3-venv missing). A lock keeps two tests from racing.
set -euo pipefail
venv=$1
mkdir -p "$(dirname "$venv")"
(
  flock 9
  "$venv/bin/python" -c 'import tokenizers, gguf' 2>/dev/null && exit 0
  echo "tokvenv: making $venv (pip install tokenizers gguf)" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q tokenizers gguf >&2 || { rm -rf "$venv"; exit 1; }
) 9>"$(dirname "$venv")/.tokvenv.lock" || { echo "tokvenv: cannot make $venv with tokenizers and gguf (offline?)" >&2; exit 1; }
echo "$venv/bin/python"
