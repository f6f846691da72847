#!/bin/sh
# check_catches.sh — check_includes.sh fails where it should: on a copy of
# compiler/ with an include that goes up (ops/ -> passes/), a kernel that
# reads the op table, a bare-name include, and a file at the top of
# compiler/, it exits 1 and names each.
# usage: check_catches.sh [SOURCE_ROOT]
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/compiler" "$tmp/compiler" || exit 1
echo '#include "../passes/passes.h"' >>"$tmp/compiler/ops/conv.c"
echo '#include "../ir/ops.h"' >>"$tmp/compiler/kernels/gemm_kernel.c"
echo '#include "ops.h"' >>"$tmp/compiler/emit/emit_kernel.c"
echo '#include "ir/ir.h"' >"$tmp/compiler/stray.c"
out=$(sh "$(dirname "$0")/check_includes.sh" "$tmp")
rc=$?
fail=0
[ $rc -eq 1 ] || { echo "check_includes.sh exited $rc on the broken copy; expected 1"; fail=1; }
for want in 'ops/conv.c:[0-9]*: includes "../passes/passes.h"' 'kernels/gemm_kernel.c:[0-9]*: includes "../ir/ops.h"' \
            'emit/emit_kernel.c:[0-9]*: includes "ops.h", which is no file' 'stray.c: in no floor'; do
  printf '%s\n' "$out" | grep -q "^$want" || { echo "no line '$want' in:"; printf '%s\n' "$out"; fail=1; }
done
[ $fail -eq 0 ] && echo "check_includes.sh caught all 4"
exit $fail
