#!/usr/bin/env bash
# test.sh — the whole test suite, as the README and CI run it: install
# dependencies, build kiln, run CTest (unit, ONNX node conformance for
# generated C and interpreter, model fixtures, bad input, generated-code
# properties), then build again with ASan+UBSan and run the suite again.
# Ends with one summary line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
total_pass=0 total_fail=0
run_suite() { # name, build dir, cmake args...
  local name=$1 dir=$2; shift 2
  echo "== $name: configure and build ($dir)"
  cmake -S . -B "$dir" "$@" >/dev/null && cmake --build "$dir" -j "$jobs" >/dev/null || {
    echo "== $name: build failed"; cmake --build "$dir" 2>&1 | tail -30; total_fail=$((total_fail + 1)); return; }
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" | tee "$dir/ctest.log"
  local line p f
  line=$(grep -E "tests passed, [0-9]+ tests failed out of" "$dir/ctest.log" | tail -1)
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
  p=$(( $(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/') - f ))
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
}
run_suite "release" build -DCMAKE_BUILD_TYPE=RelWithDebInfo
# the compiler is a one-shot process with arena allocation: leaks at exit
# are by design, everything else ASan/UBSan finds is fatal
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  run_suite "asan+ubsan" build-asan -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON
echo "== all suites: $total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
