#!/usr/bin/env bash
# llamacpp.sh — builds llama.cpp's llama-bench once, for the decode benchmark
# (bench/decode.sh) to time beside kiln on the same GGUF.
#   bash bench/llamacpp.sh            # prints the llama-bench path on stdout
# Why this way: the machines reach PyPI and Debian only, and PyPI's
# llama-cpp-python sdist vendors llama.cpp's full sources (vendor/llama.cpp).
# We download the pinned sdist from PyPI (no install, no Python bindings) and
# build the native binary with cmake: CPU only, -march=native (GGML_NATIVE),
# OpenMP threads, static libraries, Release. Only llama-bench is built (it
# times prompt processing and generation itself, at any context depth).
# Cached in $KILN_LLAMACPP_DIR (default build/llamacpp): a second run with the
# same version only prints the path. When pip or the build fails it prints
# `llamacpp: SKIP: ...` on stderr and exits 77.
# Environment: KILN_LLAMACPP_DIR; KILN_LLAMACPP_PY (the llama-cpp-python
# version, default below); JOBS (default 2: the dev box has 2 shared cores).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${KILN_LLAMACPP_DIR:-$root/build/llamacpp}
# llama-cpp-python 0.3.36 vendors llama.cpp commit 0c1e57098 (its CHANGELOG);
# the sdist has no .git, so the commit is passed to cmake by hand.
ver=${KILN_LLAMACPP_PY:-0.3.36}
declare -A commits=([0.3.36]=0c1e57098)
commit=${commits[$ver]:-unknown}
jobs=${JOBS:-2}
skip() { echo "llamacpp: SKIP: $*" >&2; exit 77; }

bin=$dir/build-$ver/bin/llama-bench
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v cmake >/dev/null || skip "cmake is missing"
command -v c++ >/dev/null || skip "no C++ compiler (c++)"
mkdir -p "$dir"
exec 9>"$dir/.lock"   # one build at a time; a second caller waits, then finds it built
flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
sdist=$dir/llama_cpp_python-$ver.tar.gz
if [ ! -f "$sdist" ]; then
  # straight from PyPI's simple index, its SHA-256 checked: `pip download
  # --no-binary :all:` first builds the sdist's build backend (and cmake)
  # from source to read its metadata, which can take an hour
  echo "llamacpp: downloading llama-cpp-python $ver's sdist from PyPI (~77 MB)" >&2
  python3 - "$ver" "$sdist" <<'PY' || skip "cannot download llama-cpp-python $ver's sdist from PyPI (offline?)"
import hashlib, re, sys, urllib.request
ver, dest = sys.argv[1], sys.argv[2]
index = urllib.request.urlopen("https://pypi.org/simple/llama-cpp-python/", timeout=60).read().decode()
m = re.search(r'href="([^"#]*/llama_cpp_python-%s\.tar\.gz)#sha256=([0-9a-f]{64})"' % re.escape(ver), index)
if not m:
    sys.exit("no sdist of %s in the index" % ver)
data = urllib.request.urlopen(m.group(1), timeout=600).read()
if hashlib.sha256(data).hexdigest() != m.group(2):
    sys.exit("SHA-256 mismatch")
open(dest + ".part", "wb").write(data)
import os; os.replace(dest + ".part", dest)
PY
fi
src=$dir/llama_cpp_python-$ver/vendor/llama.cpp
if [ ! -f "$src/CMakeLists.txt" ]; then
  tar -xzf "$sdist" -C "$dir" || skip "cannot unpack $sdist"
  [ -f "$src/CMakeLists.txt" ] || skip "$sdist has no vendor/llama.cpp"
fi
b=$dir/build-$ver
echo "llamacpp: building llama-bench (llama.cpp $commit) in $b; ~10 min on 2 cores" >&2
nice -n 10 cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DGGML_OPENMP=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_COMMIT="$commit" -DLLAMA_BUILD_NUMBER=0 >"$dir/cmake.log" 2>&1 ||
  skip "cmake configure failed (see $dir/cmake.log)"
nice -n 10 cmake --build "$b" --target llama-bench -j"$jobs" >"$dir/build.log" 2>&1 ||
  skip "build failed (see $dir/build.log)"
[ -x "$bin" ] || skip "no llama-bench at $bin after the build"
echo "$bin"
