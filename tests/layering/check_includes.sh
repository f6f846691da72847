#!/bin/sh
# check_includes.sh — the layering rule of STYLE.md ("Includes point down
# the layers"), checked on compiler/'s #include lines: base includes no
# compiler header, ir only base and the op table, kernels/ only emit.h and
# their own headers, ops/ never passes.h or a frontend. Prints each
# violation; exits 1 if there is one.
# usage: check_includes.sh [SOURCE_ROOT]
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root/compiler" || exit 1
# FILES... ALLOWED_REGEX: every quoted include of FILES must match
allow() {
  re=$1
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):#include "\(.*\)".*/\1 \2/' | while read -r line inc; do
      echo "$inc" | grep -Eq "^($re)\$" || echo "$f:$line: includes \"$inc\" (not allowed there: STYLE.md)"
    done
  done
}
out=$(
  allow 'base\.h' base.c base.h
  allow 'base\.h|ir\.h|ops\.h|ops\.def' ir.c ir.h ops.h
  # blockquant.h (ggml's block formats) is a leaf over ir.h that ops and
  # kernels both read
  allow '\.\./emit\.h|\.\./emit_api\.h|\.\./ir\.h|\.\./base\.h|\.\./blockquant\.h|[a-z_]+_kernel\.h|vector_views\.h' kernels/*.c kernels/*.h
  # ops/: anything but the pipeline above them (export lowerings live in
  # export/, which may include ops/ headers, never the other way)
  allow '\.\./(base|ir|ops|emit|emit_api|build|templates|blockquant)\.h|\.\./kernels/[a-z_]+\.h|[a-z_]+\.h' ops/*.c ops/*.h
  grep -n '^#include "\.\./\(passes\|export\|lua\)' ops/*.c ops/*.h kernels/*.c kernels/*.h 2>/dev/null |
    sed 's/$/ (ops and kernels must not include the pipeline: STYLE.md)/'
)
out=$(printf '%s\n' "$out" | grep -v '^$')
if [ -n "$out" ]; then
  printf '%s\n' "$out"
  exit 1
fi
echo "includes follow the layers"
