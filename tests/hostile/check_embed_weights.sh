#!/bin/bash
# check_embed_weights.sh KILN WORK — examples/embed.c's --weights FILE
# (issue 21), on examples/bert.lua's tiny preset compiled as minilm with
# --weights-mode=blob: a folder and a file of another size (a sparse 1 GiB one)
# are refused before any allocation or read, a copy with one flipped bit
# is refused by minilm_verify_weights, and the blob itself works. Each
# refusal is one "embed: ..." line, exit 1.
set -u
kiln=$1 work=$2 root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work/w.d"
cd "$work" || exit 1
"$kiln" compile "$root/examples/bert.lua" --set preset=tiny --set seq=16 --set pooler=false --name minilm \
  --weights-mode=blob -o minilm.c || exit 1
cc -std=c99 -O1 -Wall -Wextra -Werror -I. "$root/examples/embed.c" minilm.c minilm_weights.S -lm -o embed || exit 1
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nman\neats\n' >vocab.txt
truncate -s 1G big.bin
cp minilm.weights.bin flipped.bin
printf '\x80' | dd of=flipped.bin bs=1 seek=$(($(stat -c %s flipped.bin) / 2)) conv=notrunc status=none
pass=0 fail=0
# case NAME WANT FILE: embed --weights FILE must exit 1 with one line holding WANT
case_() {
  local rc out lines rss
  /usr/bin/time -f %M -o rss.txt ./embed --vocab vocab.txt --weights "$3" "a man eats" >/dev/null 2>err.txt
  rc=$?
  out=$(head -n 1 err.txt) lines=$(wc -l <err.txt) rss=$(tail -n 1 rss.txt)
  if [ $rc = 1 ] && [ "$lines" = 1 ] && [[ $out == *"$2"* ]] && [ "$rss" -lt 65536 ]; then
    echo "ok   $1: $out (${rss} KB)"; pass=$((pass + 1))
  else
    echo "FAIL $1: exit $rc, $lines lines, ${rss} KB: $(cat err.txt)"; fail=$((fail + 1))
  fi
}
case_ folder "not a regular file" w.d
case_ size_1GiB "1073741824 bytes; expected" big.bin
case_ flipped_bit "another model" flipped.bin
if ./embed --vocab vocab.txt --weights minilm.weights.bin --embeddings "a man eats" >out.txt 2>&1 &&
   ./embed --vocab vocab.txt --embeddings "a man eats" >linked.txt 2>&1 &&
   cmp -s <(grep -v ' ms per ' out.txt) <(grep -v ' ms per ' linked.txt); then
  echo "ok   the blob from a file, and linked in"; pass=$((pass + 1))
else
  echo "FAIL the blob itself: $(cat out.txt)"; fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
