#!/usr/bin/env bash
# run_cli.sh KILN MODEL.onnx — hostile command lines (issue 12's "data
# loss / silent acceptance" list): each must exit 1 with one "kiln: ..."
# line holding the expected text, leave the input model byte-for-byte
# intact, and write no output file. Cases run in a fresh folder holding
# a copy of MODEL as m.onnx. Prints one line per case and
# "N passed, N failed".
set -u
export LC_ALL=C
kiln=$(realpath "$1") model=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
pass=0 fail=0

# case NAME EXPECTED ARGS...: (the copy of the model is m.onnx, as are its
# aliases the case sets up with ln/cp before)
case_() {
  local name=$1 want=$2
  shift 2
  local dir=$work/$name
  mkdir -p "$dir" && cp "$model" "$dir/m.onnx"
  (cd "$dir" && eval "${SETUP:-true}")
  local before
  before=$(cd "$dir" && ls -A | sort)
  local rc
  rc=$( (cd "$dir" && timeout 60 "$kiln" "$@" >stdout.txt 2>stderr.txt; echo $?) )
  local err lines after why=""
  err=$(head -n 1 "$dir/stderr.txt")
  lines=$(wc -l <"$dir/stderr.txt")
  after=$(cd "$dir" && ls -A | grep -v '^std\(out\|err\)\.txt$' | sort)
  [ "$rc" = 1 ] || why="exit status $rc, expected 1"
  [ -z "$why" ] && [ "$lines" != 1 ] && why="$lines lines on stderr, expected 1"
  [ -z "$why" ] && [[ "$err" != *"$want"* ]] && why="message lacks '$want': $err"
  [ -z "$why" ] && ! cmp -s "$model" "$dir/m.onnx" && why="the input model was changed"
  [ -z "$why" ] && [ "$before" != "$after" ] && why="files changed: $(echo $after)"
  [ -z "$why" ] && [ -n "${NO_STDOUT:-}" ] && [ -s "$dir/stdout.txt" ] && why="printed on stdout before failing"
  if [ -z "$why" ]; then echo "ok   $name"; pass=$((pass + 1)); else echo "FAIL $name: $why"; fail=$((fail + 1)); fi
}

SETUP="cp m.onnx x.c" case_ o_is_input "would overwrite the input model" compile x.c -o x.c
SETUP="cp m.onnx h.h" case_ header_is_input "would overwrite the input model" compile h.h -o h.c
SETUP="cp m.onnx w.weights.bin" case_ blob_is_input "would overwrite the input model" compile w.weights.bin -o w.c
SETUP="mkdir d.c" case_ o_is_folder "is a folder" compile m.onnx -o d.c
SETUP= case_ set_for_onnx "are for .lua models" compile m.onnx --set seq=4 -o o.c
SETUP= case_ weights_for_onnx "are for .lua models" compile m.onnx --weights w.safetensors -o o.c
SETUP= case_ weights_mode_bad "--weights-mode=safe.safetensors: expected blob, inline or auto" \
  compile m.onnx --weights-mode=safe.safetensors -o o.c
SETUP= case_ shape_twice "already bound to other dims" compile m.onnx --shape src=2x16x64 --shape src=1x16x64 -o o.c
SETUP= case_ fold_limit_negative "expected a byte count" compile m.onnx --fold-limit=-1 -o o.c
SETUP= case_ name_keyword "not a C keyword" compile m.onnx --name int -o o.c
# external data that names a FIFO: opening it for reading would wait for a writer forever
SETUP="cp '$here/external_data_missing.onnx' e.onnx && mkfifo no_such_weights.bin" \
  case_ external_data_fifo "not a regular file" compile e.onnx -o o.c
# external data through a link that leaves the model's folder, as '../' would
SETUP="cp '$here/external_data_missing.onnx' e.onnx && head -c 24 /dev/zero > ../outside.bin &&
       ln -s ../outside.bin no_such_weights.bin" \
  case_ external_data_link_out "outside the model's folder" compile e.onnx -o o.c

# a generative model (decoder{}) has NAME_prefill/NAME_step: kiln bench and
# kiln check, which call NAME_run, refuse it
SETUP="cp '$here/../generate/tiny_decoder.lua' dec.lua" case_ bench_decoder "a generative model" bench dec.lua
SETUP="mkdir -p dd/test_data_set_0 && cp '$here/../generate/tiny_decoder.lua' dd/model.lua" \
  case_ check_decoder "a generative model" check dd

# kiln check / bench: a --cc (or $CC) that does not exist is one kiln line,
# not the shell's "not found" and kiln's "did not build"
data="$here/../models/encoder_2l_op14/test_data_set_0"
SETUP="mkdir -p d/test_data_set_0 && cp m.onnx d/model.onnx && cp '$data'/*.pb d/test_data_set_0/" \
  case_ check_cc_missing "--cc=no-such-cc-kiln: no such program" check d --cc=no-such-cc-kiln
SETUP= case_ bench_cc_missing "--cc=/no/such/cc: no such program" bench m.onnx --cc=/no/such/cc --runs 1
# a reference output of the wrong shape or element type is bad input, named,
# before anything is built: no progress on stdout, no verdict line
SETUP="mkdir -p d/test_data_set_0 && cp m.onnx d/model.onnx && cp '$data/input_0.pb' d/test_data_set_0/ &&
       cp '$here/tensor_f32_2x3.pb' d/test_data_set_0/output_0.pb" \
  case_ check_output_wrong_shape "d/test_data_set_0/output_0.pb: f32[2,3] for output 'out'; expected f32[2,16,64]" check d
SETUP="mkdir -p d/test_data_set_0 && cp m.onnx d/model.onnx && cp '$data/input_0.pb' d/test_data_set_0/ &&
       cp '$here/tensor_i64_2x3.pb' d/test_data_set_0/output_0.pb" \
  case_ check_output_wrong_dtype "d/test_data_set_0/output_0.pb: i64[2,3] for output 'out'" check d --interp
SETUP="mkdir -p d/test_data_set_0 && cp m.onnx d/model.onnx && cp '$here/tensor_i64_2x3.pb' d/test_data_set_0/input_0.pb &&
       cp '$data/output_0.pb' d/test_data_set_0/" \
  case_ check_input_wrong_dtype "d/test_data_set_0/input_0.pb: i64[2,3] for input 'src'; expected f32[2,16,64]" check d
# kiln run / bench --input: the file is named, not the model
SETUP="cp '$here/tensor_i64_2x3.pb' x.pb" case_ run_input_wrong_dtype "kiln: x.pb: i64[2,3] for input 'src'; expected f32[2,16,64]" \
  run m.onnx --input src=x.pb
SETUP="cp '$here/tensor_f32_2x3.pb' x.pb" case_ bench_input_wrong_shape "kiln: x.pb: f32[2,3] for input 'src'" \
  bench m.onnx --input src=x.pb --runs 1
SETUP="head -c 7 '$here/tensor_f32_2x3.pb' > x.pb" case_ run_input_truncated "kiln: x.pb: not a serialized TensorProto" \
  run m.onnx --input src=x.pb
SETUP= case_ run_out_missing_folder "--out no/such: no such folder" run m.onnx --out no/such
# a 16 GiB param{} made by a script: refused at its line, before any allocation
SETUP="printf 'local x = input{\"x\", {2, 3}}\nlocal w = param{\"w\", {65536, 65536}}\noutput(x + w:sum(), \"y\")\n' > big.lua" \
  case_ lua_param_16gib "big.lua:2: param 'w': 16384 MiB of initial values; expected at most 512 MiB" compile big.lua -o o.c

# issue 21: --dump-before alone read past the end of the list of dump
# flags; kiln run --out writes all its files or none; kiln info writes
# --memory-svg before it prints anything
SETUP= case_ dump_before_unknown "--dump-before=nosuch: unknown pass" compile m.onnx --dump-before=nosuch -o o.c
SETUP="mkdir output_1.pb && cp '$here/two_outputs.kir' t.kir && cp '$here/tensor_f32_2x3.pb' x.pb" \
  case_ run_out_all_or_none "output_1.pb" run t.kir --input x=x.pb --out .
NO_STDOUT=1 SETUP= case_ memory_svg_missing_folder "no/such/m.svg" info m.onnx --memory-svg no/such/m.svg

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
