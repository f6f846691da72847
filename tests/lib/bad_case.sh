# bad_case.sh — sourced by op test scripts (tests/sparse/run_sparse_tests.sh,
# tests/entmax/run_tests.sh): `bad CMD FILE TEXT` runs `kiln CMD
# $here/bad/FILE -o ...` and records (with the script's record NAME STATUS
# LOG) whether it failed as bad input must: exit status 1, nothing on
# stdout, one stderr line "kiln: FILE: ..." holding TEXT, no output file.
# Uses the script's $kiln, $here and $work.
bad() {
  local cmd=$1 file=$here/bad/$2 text=$3 out=$work/bad-$RANDOM
  mkdir -p "$out"
  local target=$out/model.c
  [ "$cmd" = export ] && target=$out/model.onnx
  "$kiln" "$cmd" "$file" -o "$target" >"$work/stdout" 2>"$work/stderr"
  local rc=$? lines
  lines=$(wc -l <"$work/stderr")
  {
    echo "exit $rc (expected 1), $lines stderr lines (expected 1), files left: $(ls "$out" | tr '\n' ' ')"
    cat "$work/stdout" "$work/stderr"
  } >"$work/log"
  [ $rc -eq 1 ] && [ "$lines" -eq 1 ] && [ ! -s "$work/stdout" ] && [ -z "$(ls "$out")" ] &&
    grep -qF "kiln: $file: $text" "$work/stderr"
  record "bad/$2: $text" $? "$work/log"
}
