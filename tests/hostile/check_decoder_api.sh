#!/bin/sh
# check_decoder_api.sh KILN WORK — decoder_api.c under ASan and UBSan
# (gcc, and clang when there is one) over a Llama-shaped decoder
# (tests/generate/tiny_decoder.lua) and an encoder-decoder
# (examples/transformer.lua --set cache=true, with its encode entry),
# each compiled with --name dec --weights-mode=blob (issue 21).
set -eu
kiln=$1 work=$2 here=$(cd "$(dirname "$0")" && pwd) root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work/llama" "$work/seq2seq"
"$kiln" compile "$root/tests/generate/tiny_decoder.lua" --name dec --weights-mode=blob -o "$work/llama/dec.c"
"$kiln" compile "$root/examples/transformer.lua" --set cache=true --name dec --weights-mode=blob -o "$work/seq2seq/dec.c"
san="-g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
for cc in gcc clang; do
  command -v $cc >/dev/null || continue
  for m in llama seq2seq; do
    d=$work/$m def=
    [ $m = seq2seq ] && def=-DENCODE
    # clang -O1 under the sanitizers does not vectorise KILN_IVDEP's loops
    # and says so (-Wpass-failed): not an error of the code
    [ $cc = clang ] && def="$def -Wno-pass-failed"
    $cc -std=c11 $san -Wall -Wextra -Werror $def -I"$d" "$here/decoder_api.c" "$d/dec.c" -lm -o "$d/api_$cc"
    echo "== $cc, $m"
    ASAN_OPTIONS=detect_leaks=1 "$d/api_$cc" "$d/dec.weights.bin"
  done
done
