#!/bin/sh
# tsan.sh KILN [--KILN-FLAG...] DIR... — kiln's thread pool (runtime/kiln_rt.h) under
# ThreadSanitizer: each case (a folder `kiln check` reads) compiled with
# --threads 3 and built with clang -fsanitize=thread, so that the workers
# run every split kernel beside the lead: a store outside a split loop
# (the code every thread of a job runs), a tile written twice, a scratch
# array one thread fills for another without KILN_SHARED, or a read of the
# job's slot without its ordering is a data race TSan reports, and the
# program's exit status then fails `kiln check`. Arguments starting with
# `-` are kiln check flags for every case (--quantize=w8a8, --rtol=...).
# Skipped (77) without a clang that builds TSan programs.
set -eu
kiln=$1
shift
tmp=$(mktemp -d /tmp/kiln-tsan-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
printf 'int main(void){return 0;}\n' >"$tmp/t.c"
if ! command -v clang >/dev/null || ! clang -fsanitize=thread -pthread "$tmp/t.c" -o "$tmp/t" 2>/dev/null || ! "$tmp/t"; then
  echo "skip: no clang with -fsanitize=thread"
  exit 77
fi
flags="" n=0
for a in "$@"; do
  case $a in -*) flags="$flags $a" ;; esac
done
fail=0
for dir in "$@"; do
  case $dir in -*) continue ;; esac
  n=$((n + 1))
  # shellcheck disable=SC2086 # flags is a list of kiln flags
  if TSAN_OPTIONS=halt_on_error=1 "$kiln" check -q --threads 3 --cc=clang \
    "--cflags=-O1 -g -fsanitize=thread -march=native" $flags "$dir"; then :; else
    echo "FAIL $dir: a data race, or wrong results, under ThreadSanitizer"
    fail=1
  fi
done
[ "$fail" = 0 ] && echo "PASS: $n models under ThreadSanitizer, 3 threads${flags}"
exit "$fail"
