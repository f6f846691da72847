#!/usr/bin/env bash
# check_blob.sh KILN WORK_DIR — weights out of the C source (--weights-mode=blob):
#   - blob_app.c links the encoder compiled with --weights-mode=blob (the blob
#     linked in by its .S) and with --weights-mode=inline, under gcc and clang
#     with -std=c99 -Wall -Wextra -Werror; outputs equal bit for bit, the
#     loaded form binds, every bad blob is refused with its own code;
#   - --weights-mode=auto keeps a small model inline and puts a > 1 MiB one in a
#     blob; the blob mode's .c does not grow with the weights (a 10x larger
#     embedding table: the .c within 1 KiB, the blob 10x);
#   - compiling twice gives byte-identical .c, .h, .S and blob.
# Ends with "N passed, N failed".
set -uo pipefail
export LC_ALL=C
kiln=$(realpath "$1") work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
size() { stat -c %s "$1"; }
model=$root/tests/models/encoder_2l_op14/model.onnx
other=$root/tests/models/encoder_2l_prenorm/model.onnx

cd "$work" && mkdir -p out other auto big big10 again
"$kiln" compile "$model" --weights-mode=blob -o out/enc.c && "$kiln" compile "$model" --weights-mode=inline --name ref -o out/ref.c &&
  "$kiln" compile "$other" --weights-mode=blob -o other/other.c || { echo "FAIL compile"; echo "0 passed, 1 failed"; exit 1; }
[ -f out/enc.weights.bin ] && [ -f out/enc_weights.S ] && [ ! -e out/ref.weights.bin ] &&
  ok "--weights-mode=blob writes enc.weights.bin and enc_weights.S; --weights-mode=inline neither" || bad "blob files"
if grep -q 'static const float ' out/enc.c && ! grep -q 'static const float [A-Za-z_0-9]*\[[0-9]\{4,\}\]' out/enc.c; then
  ok "blob mode keeps only small arrays (<= 256 bytes) in the .c"
else
  bad "blob mode .c holds large arrays"
fi
for cc in gcc clang; do
  command -v $cc >/dev/null || continue
  if $cc -std=c99 -O2 -Wall -Wextra -Werror -Iout "$root/tests/blob/blob_app.c" out/enc.c out/ref.c \
       out/enc_weights.S -lm -o blob_app_$cc; then
    ./blob_app_$cc out/enc.weights.bin other/other.weights.bin >app_$cc.log 2>&1 &&
      ok "$cc: blob_app ($(grep -c '^ok' app_$cc.log) checks)" || { bad "$cc: blob_app"; cat app_$cc.log; }
  else
    bad "$cc: blob_app does not build"
  fi
done

# auto: the 400 KB encoder stays inline; bert.lua tiny with a 1.5 MiB vocab goes to a blob
"$kiln" compile "$model" -o auto/enc.c && [ ! -e auto/enc.weights.bin ] && ok "auto: 400 KB of weights stay inline" ||
  bad "auto: small model"
"$kiln" compile "$root/examples/bert.lua" --set preset=tiny --set seq=16 --set vocab=6000 -o big/m.c &&
  "$kiln" compile "$root/examples/bert.lua" --set preset=tiny --set seq=16 --set vocab=60000 -o big10/m.c &&
  [ -f big/m.weights.bin ] && ok "auto: 1.6 MB of weights go to a blob" || bad "auto: large model"
c1=$(size big/m.c) c2=$(size big10/m.c) b1=$(size big/m.weights.bin) b2=$(size big10/m.weights.bin)
if [ $((c2 - c1)) -lt 1024 ] && [ $((c1 - c2)) -lt 1024 ] && [ "$b2" -gt $((8 * b1)) ]; then
  ok "the .c does not grow with the weights ($c1 vs $c2 bytes of C; blob $b1 vs $b2)"
else
  bad "the .c grows with the weights ($c1 vs $c2 bytes of C; blob $b1 vs $b2)"
fi

# determinism
"$kiln" compile "$model" --weights-mode=blob -o again/enc.c
same=1
for f in enc.c enc.h enc_weights.S enc.weights.bin; do cmp -s out/$f again/$f || same=0; done
[ $same = 1 ] && ok "byte-identical on a second compile" || bad "not deterministic"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
