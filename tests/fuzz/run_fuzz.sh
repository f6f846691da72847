#!/usr/bin/env bash
# run_fuzz.sh SECONDS [SRC_ROOT] — build tests/fuzz/fuzz_onnx.c,
# fuzz_kir.c, fuzz_safetensors.c, fuzz_gguf.c, fuzz_npy.c, fuzz_pb.c and
# fuzz_lua.c with clang's libFuzzer, ASan and UBSan against kiln's compiler
# sources and fuzz the ONNX importer, the .kir parser and the Lua frontend
# (each followed by the pass pipeline and C emission), the .safetensors
# reader (and writer), the GGUF reader and the tensor-file readers of kiln
# run/check/bench (.npy and TensorProto .pb, each with its writer) for
# SECONDS seconds each.
# run_fuzz.sh --runs N [SRC_ROOT] — the same for N inputs each from a fixed
# seed (N/10 for the .pb reader, whose inputs are files, N/40 for the Lua
# frontend, whose inputs run scripts): deterministic
# (same inputs on every machine, whatever its speed), which is what ctest's
# fuzz_smoke runs, so the CI gate cannot flip on luck. Long open-ended runs
# use SECONDS; KILN_FUZZ_ONLY="npy lua" fuzzes only those targets (names
# without fuzz_), e.g. the documented long run of the newer targets:
#   nice tests/fuzz/run_fuzz.sh 3600   (or KILN_FUZZ_ONLY=lua ... 3600)
#
# Before fuzzing, every file in tests/fuzz/regress/{onnx,kir,safetensors,
# gguf,npy,pb,lua}/ (inputs that once crashed kiln) is replayed through its
# target.
#
# SRC_ROOT (default: this checkout) is the tree whose compiler/ is fuzzed.
# The protoc-c bindings and the embedded templates are generated into the
# build folder the same way CMake does. Seeds: tests/bad/*.onnx and a few
# small ONNX backend node tests; tests/safetensors/make_files.py's corpus
# for the safetensors reader; tests/gguf/'s fixtures and make_bad.py's
# damaged copies for the GGUF reader; make_npy_seeds.py's files (every
# element type, versions 1-3, damaged ones) for .npy; the node tests' and
# fixtures' TensorProtos for .pb; tests/lua/'s scripts (bad ones included)
# and tests/dsl/methods.lua for the Lua frontend. Findings are saved as crash-*/leak-*/oom-*
# files in $KILN_FUZZ_DIR (default build-fuzz/, full log in fuzz.log there);
# the script exits 1 if any.
#
# Needs: clang with the libFuzzer runtime (Debian: apt-get install clang
# libclang-rt-14-dev), protoc-c, libprotobuf-c-dev, libjansson-dev, cmake, python3.
set -eu -o pipefail

usage="usage: run_fuzz.sh SECONDS [SRC_ROOT] | run_fuzz.sh --runs N [SRC_ROOT]"
if [ "${1:-}" = --runs ]; then
  runs=${2:?$usage}
  shift 2
  budget=(-runs="$runs" -seed=1)
  # the targets that write a file per input, or run a script, take fewer:
  # each adds ~5-10 s to ctest's fuzz_smoke at its --runs 10000
  pb_budget=(-runs="$((runs / 10))" -seed=1)
  lua_budget=(-runs="$((runs / 40))" -seed=1)
  what="$runs inputs a target ($((runs / 10)) for fuzz_pb, $((runs / 40)) for fuzz_lua), seed 1"
else
  secs=${1:?$usage}
  shift
  budget=(-max_total_time="$secs")
  pb_budget=("${budget[@]}")
  lua_budget=("${budget[@]}")
  what="${secs}s a target"
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "${1:-$here/../..}" && pwd)
out=${KILN_FUZZ_DIR:-$here/../../build-fuzz}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cc=${CLANG:-clang}
jobs=${KILN_FUZZ_JOBS:-1}
proto=${ONNX_PROTO_DIR:-/usr/include/onnx}
nodes=${ONNX_NODE_TESTS:-/usr/include/onnx/backend/test/data/node}

command -v "$cc" >/dev/null || { echo "run_fuzz.sh: $cc not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }

# generated sources, as CMakeLists.txt makes them
gen=$out/gen
mkdir -p "$gen"
if [ ! -f "$gen/onnx.pb-c.c" ] || [ "$proto/onnx.proto" -nt "$gen/onnx.pb-c.c" ]; then
  protoc-c --c_out="$gen" -I"$proto" "$proto/onnx.proto"
fi
templates=
for t in "$root"/templates/*.c.in; do [ -e "$t" ] && templates="$templates$t;"; done
cmake -DOUT="$gen/templates_data.c" "-DFILES=${templates}$root/runtime/kiln_rt.h" \
      -P "$root/cmake/embed_templates.cmake" >/dev/null

# build: one object per source so a rebuild after a small edit stays quick
flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=undefined -I$root/compiler -I$gen $(pkg-config --cflags lua5.4)"
objs=()
# shellcheck disable=SC2012
newest_h=$(ls -t "$root"/compiler/*/*.h "$gen/onnx.pb-c.h" | head -n 1)
# every compiler source but cmd/main.c, as CMake's KILN_SOURCES glob takes them
for s in "$root"/compiler/*/*.c "$gen/templates_data.c"; do
  [ "$s" = "$root/compiler/cmd/main.c" ] || [ ! -e "$s" ] && continue
  o=$out/obj/$(echo "${s#"$root"/}" | tr '/' '_').o
  mkdir -p "$out/obj"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$newest_h" -nt "$o" ]; then
    # shellcheck disable=SC2086
    "$cc" -std=gnu11 $flags -c "$s" -o "$o"
  fi
  objs+=("$o")
done
pbo=$out/obj/onnx.pb-c.o
if [ ! -f "$pbo" ] || [ "$gen/onnx.pb-c.c" -nt "$pbo" ]; then
  # shellcheck disable=SC2086
  "$cc" $flags -w -c "$gen/onnx.pb-c.c" -o "$pbo"
fi
for target in fuzz_onnx fuzz_kir fuzz_safetensors fuzz_gguf fuzz_npy fuzz_pb fuzz_lua; do
  # shellcheck disable=SC2086
  "$cc" $flags -fsanitize=fuzzer -c "$here/$target.c" -o "$out/obj/$target.o"
  # shellcheck disable=SC2046
  "$cc" -fsanitize=fuzzer,address,undefined "$out/obj/$target.o" "${objs[@]}" "$pbo" \
        $(pkg-config --libs libprotobuf-c jansson lua5.4) -lm -o "$out/$target"
done

# seed corpus: the bad-input cases and some small node tests
seeds=$out/seeds
mkdir -p "$seeds" "$out/corpus"
cp "$root"/tests/bad/*.onnx "$seeds"/ 2>/dev/null || true
for t in test_add_bcast test_relu test_gather_0 test_transpose_default test_reshape_extended_dims \
         test_matmul_2d test_softmax_axis_1 test_reduce_sum_keepdims_example test_slice \
         test_concat_2d_axis_0 test_layer_normalization_2d_axis0 test_where_example test_cast_FLOAT_to_DOUBLE \
         test_constantofshape_int_zeros test_expand_dim_changed test_topk test_cumsum_1d; do
  [ -f "$nodes/$t/model.onnx" ] && cp "$nodes/$t/model.onnx" "$seeds/$t.onnx"
done

# dictionary: every op name kiln knows, plus ONNX attribute and key words
dict=$out/onnx.dict
{ sed -n 's/^OP([A-Z0-9_]*, *\("[A-Za-z]*"\).*/\1/p' "$root/compiler/ir/ops.def"
  for w in axis axes perm keepdims transA transB alpha beta epsilon value shape to mode \
           location offset length ai.onnx com.microsoft batch; do echo "\"$w\""; done
} >"$dict"

rm -f "$out"/crash-* "$out"/leak-* "$out"/oom-* "$out"/timeout-*
cd "$out"
rc=0
# the regression corpus first: each file once through its target
regress=$here/regress
for t in onnx kir safetensors gguf npy pb lua; do
  files=("$regress/$t"/*)
  [ -e "${files[0]}" ] || continue
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ./fuzz_$t -rss_limit_mb=2048 "${files[@]}" >"$out/regress_$t.log" 2>&1 ||
    { echo "run_fuzz.sh: a regression input crashes fuzz_$t again (log: $out/regress_$t.log)" >&2
      tail -n 30 "$out/regress_$t.log" >&2; exit 1; }
done
echo "fuzzing for $what (findings in $out)" >&2
# wanted NAME: whether KILN_FUZZ_ONLY (default: every target) names it
wanted() { [ -z "${KILN_FUZZ_ONLY:-}" ] || [[ " $KILN_FUZZ_ONLY " == *" $1 "* ]]; }
parallel=()
[ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
# -rss_limit_mb: a 100-byte model must not make kiln allocate gigabytes
! wanted onnx ||
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ./fuzz_onnx "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -dict="$dict" \
              ${parallel[@]+"${parallel[@]}"} -print_final_stats=1 \
              corpus "$seeds" 2>&1 | tee "$out/fuzz.log" | tail -n 12 || rc=$?
# the text IR parser, seeded with the pass tests
mkdir -p "$out/corpus_kir" "$out/seeds_kir"
cp "$root"/tests/passes/*.kir "$out/seeds_kir"/ 2>/dev/null || true
! wanted kir ||
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ./fuzz_kir "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
             ${parallel[@]+"${parallel[@]}"} -print_final_stats=1 \
             corpus_kir "$out/seeds_kir" 2>&1 | tee "$out/fuzz_kir.log" | tail -n 12 || rc=$?
# the safetensors reader, seeded with the good and bad files of its tests
mkdir -p "$out/corpus_st" "$out/seeds_st"
"${PYTHON3:-/usr/bin/python3}" "$root/tests/safetensors/make_files.py" "$out/seeds_st" &&
  rm -f "$out/seeds_st/cases.txt" || echo "run_fuzz.sh: no safetensors seeds (python3 failed)" >&2
printf '"%s"\n' dtype shape data_offsets __metadata__ F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 \
  U8 BOOL '\\u00e9' >"$out/safetensors.dict"
! wanted safetensors ||
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ./fuzz_safetensors "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
                     -dict="$out/safetensors.dict" ${parallel[@]+"${parallel[@]}"} -print_final_stats=1 \
                     corpus_st "$out/seeds_st" 2>&1 | tee "$out/fuzz_st.log" | tail -n 12 || rc=$?
# the GGUF reader, seeded with the fixtures and their damaged copies
mkdir -p "$out/corpus_gguf" "$out/seeds_gguf"
cp "$root"/tests/gguf/*.gguf "$out/seeds_gguf"/
"${PYTHON3:-/usr/bin/python3}" "$root/tests/gguf/make_bad.py" "$root/tests/gguf/tiny_llama.gguf" \
  "$out/seeds_gguf" && rm -f "$out/seeds_gguf/cases.txt" || echo "run_fuzz.sh: no bad GGUF seeds (python3 failed)" >&2
printf '"%s"\n' GGUF general.alignment general.architecture tokenizer.ggml.tokens >"$out/gguf.dict"
! wanted gguf ||
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ./fuzz_gguf "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=163840 \
              -dict="$out/gguf.dict" ${parallel[@]+"${parallel[@]}"} -print_final_stats=1 \
              corpus_gguf "$out/seeds_gguf" 2>&1 | tee "$out/fuzz_gguf.log" | tail -n 12 || rc=$?
# .npy files, seeded with make_npy_seeds.py's good and damaged files
mkdir -p "$out/corpus_npy" "$out/seeds_npy"
"${PYTHON3:-/usr/bin/python3}" "$here/make_npy_seeds.py" "$out/seeds_npy" ||
  echo "run_fuzz.sh: no .npy seeds (python3 with numpy failed)" >&2
printf '"%s"\n' "\x93NUMPY" descr fortran_order shape False True "'<f4'" "'|b1'" "'>f8'" "(2, 3)" "(5,)" "()" \
  >"$out/npy.dict"
! wanted npy ||
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ./fuzz_npy "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
             -dict="$out/npy.dict" ${parallel[@]+"${parallel[@]}"} -print_final_stats=1 \
             corpus_npy "$out/seeds_npy" 2>&1 | tee "$out/fuzz_npy.log" | tail -n 12 || rc=$?
# TensorProto files, seeded with the small tensors of the node tests and fixtures
mkdir -p "$out/corpus_pb" "$out/seeds_pb"
k=0
for f in "$nodes"/test_{add_bcast,cast_FLOAT_to_DOUBLE,gather_0,topk,where_example,constantofshape_int_zeros}/test_data_set_0/*.pb \
         "$root"/tests/bad/*.pb "$root"/tests/models/encoder_2l_op14/test_data_set_0/*.pb; do
  [ -f "$f" ] && cp "$f" "$out/seeds_pb/$((k += 1)).pb"
done
! wanted pb ||
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ./fuzz_pb "${pb_budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
            ${parallel[@]+"${parallel[@]}"} -print_final_stats=1 \
            corpus_pb "$out/seeds_pb" 2>&1 | tee "$out/fuzz_pb.log" | tail -n 12 || rc=$?
# the Lua frontend, seeded with the test scripts, bad ones included
mkdir -p "$out/corpus_lua" "$out/seeds_lua"
cp "$root"/tests/lua/bad/*.lua "$root"/tests/lua/sandbox/*.lua "$root"/tests/dsl/*.lua "$out/seeds_lua"/ 2>/dev/null || true
{ for w in input output param config const weights nn.linear nn.layer_norm nn.encoder_layer matmul softmax \
           reshape transpose gather split concat sum mean shape dtype f32 i64 bool local function \
           return end for while repeat until string.rep pcall setmetatable; do echo "\"$w\""; done
} >"$out/lua.dict"
! wanted lua ||
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  ./fuzz_lua "${lua_budget[@]}" -timeout=20 -rss_limit_mb=2048 -max_len=8192 \
             -dict="$out/lua.dict" ${parallel[@]+"${parallel[@]}"} -print_final_stats=1 \
             corpus_lua "$out/seeds_lua" 2>&1 | tee "$out/fuzz_lua.log" | tail -n 12 || rc=$?
found=0
for f in "$out"/crash-* "$out"/leak-* "$out"/oom-* "$out"/timeout-*; do
  [ -e "$f" ] || continue
  [ $found -eq 0 ] && echo "findings (reproduce with $out/fuzz_TARGET FILE: onnx, kir, safetensors, gguf, npy, pb, lua):" >&2
  echo "  $f" >&2
  found=1
done
[ $found -eq 0 ] || exit 1
exit "$rc"
