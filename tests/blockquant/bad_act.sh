#!/bin/sh
# bad_act.sh KILN OUT_DIR — a BlockLinear with an unknown act and a bad
# --kquant-act value are refused in one line naming what was expected.
set -u
kiln=$1 out=$2
mkdir -p "$out"
head -c 144 /dev/zero > "$out/m.bin"
cat > "$out/m.kir" <<'KIR'
graph @g opset 14 (%x: f32[1,256]) -> (%y) {
  const %wb: u8[1,144] = bin(0)
  %y = BlockLinear %x, %wb {format="q4_k", act="q4"} : ?
}
KIR
fail=0
expect() { # WANT CMD...: exit status 1 and WANT in the one line of stderr
  want=$1
  shift
  "$@" >/dev/null 2>"$out/err"
  rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l < "$out/err")" -ne 1 ] || ! grep -q "$want" "$out/err"; then
    echo "FAIL (exit $rc, want '$want'): $*"
    cat "$out/err"
    fail=1
  else
    echo "ok   $(cat "$out/err")"
  fi
}
expect "act 'q4' is unknown; expected f32 or q8" "$kiln" compile "$out/m.kir" -o "$out/m.c"
expect "kquant-act=int8: expected f32 or q8" "$kiln" compile "$out/m.kir" --kquant-act=int8 -o "$out/m.c"
exit $fail
