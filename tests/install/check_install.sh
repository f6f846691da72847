#!/usr/bin/env bash
# check_install.sh BUILD_DIR WORK_DIR — kiln as another project sees it:
#   - `cmake --install BUILD_DIR --prefix WORK_DIR/prefix` installs bin/kiln
#     (the build's own), kiln_rt.h, kiln.1, the CMake package, kiln.pc and
#     the GGUF architectures' descriptions (share/kiln/arch/);
#   - kiln.1 holds every line of `kiln --help` (read back from its roff)
#     and the sections a man page has; groff reads it without a warning;
#   - examples/cmake configures and builds against that prefix alone
#     (find_package(kiln), kiln_add_model), and its app's output on the
#     fixture's input agrees with PyTorch's reference output; rebuilding
#     runs kiln again only when the model or the kiln binary changed;
#   - the same with WEIGHTS_MODE blob and THREADS 2 (a linked blob, the pool);
#   - kiln_add_model's other keywords (a .lua model with SET, QUANTIZE,
#     ISA, NAME, DEPENDS, OPTIONS) build and link, and bad arguments stop
#     the configure with their kiln_add_model: message;
#   - without CMake: kiln from `pkg-config --variable=kiln kiln`, the C built
#     with `pkg-config --cflags --libs kiln` (which must find kiln_rt.h).
# Ends with "N passed, N failed"; exit 1 on any failure.
set -uo pipefail
export LC_ALL=C
build=$(realpath "$1") work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work" && work=$(realpath "$work")
prefix=$work/prefix
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ "$fail" = 0 ]; exit; }
fixture=$root/tests/models/encoder_2l_op14
n=2048 # floats in the fixture's input and output, f32[2,16,64]

# raw_data of a TensorProto .pb as raw floats: ONNX writes raw_data (field
# 9: tag 0x4a, length 8192 = varint 80 40) last, so it is the file's tail
raw_tail() {
  [ "$(tail -c $((n * 4 + 3)) "$1" | head -c 3 | od -An -tx1 | tr -d ' \n')" = 4a8040 ] &&
    tail -c $((n * 4)) "$1" >"$2"
}
# got.f32 want.f32: |got - want| <= 1e-5 + 1e-4 |want| everywhere (kiln check's default)
close() {
  paste <(od -An -v -w4 -tf4 "$1") <(od -An -v -w4 -tf4 "$2") | awk -v n=$n '
    { d = $1 - $2; if (d < 0) d = -d; w = $2 < 0 ? -$2 : $2; if (d > m) m = d
      if (d > 1e-5 + 1e-4 * w) bad++; k++ }
    END { printf "max |diff| %.3g over %d values\n", m, k; exit !(k == n && bad == 0) }'
}

# --- install ---------------------------------------------------------------
if ! cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
  bad "cmake --install"; cat "$work/install.log"; finish
fi
cmakedir=$(dirname "$(find "$prefix" -name kilnConfig.cmake | head -1)")
pcdir=$(dirname "$(find "$prefix" -name kiln.pc | head -1)")
man=$prefix/share/man/man1/kiln.1
missing=""
for f in "$prefix/bin/kiln" "$prefix/include/kiln_rt.h" "$man" "$prefix/share/bash-completion/completions/kiln" \
         "$cmakedir/kilnConfig.cmake" \
         "$cmakedir/kilnConfigVersion.cmake" "$cmakedir/KilnAddModel.cmake" "$pcdir/kiln.pc"; do
  [ -f "$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && [[ $cmakedir == $prefix/lib*/cmake/kiln ]] &&
  ok "installed bin/kiln, include/kiln_rt.h, share/man/man1/kiln.1, ${cmakedir#$prefix/}/kilnConfig*.cmake, ${pcdir#$prefix/}/kiln.pc" ||
  bad "installed files missing:$missing (cmake dir '$cmakedir')"
kiln=$prefix/bin/kiln
[ -x "$kiln" ] || finish
# (the same program; not cmp: install may rewrite an RPATH)
[ "$("$kiln" --version; "$kiln" --help; "$kiln" passes)" = "$("$build/kiln" --version; "$build/kiln" --help; "$build/kiln" passes)" ] &&
  "$kiln" --version | grep -q '^kiln [0-9]' && ok "bin/kiln is the build's kiln ($("$kiln" --version))" ||
  bad "bin/kiln differs from $build/kiln"
cmp -s "$prefix/include/kiln_rt.h" "$root/runtime/kiln_rt.h" && ok "include/kiln_rt.h is runtime/kiln_rt.h" ||
  bad "include/kiln_rt.h differs from runtime/kiln_rt.h"
# the GGUF architectures' descriptions: share/kiln/arch/ARCH.lua for each
# compiler/arch/ARCH.lua and llama's (examples/llama.lua), byte for byte,
# and nothing else there
archs="" arch_bad=""
for src in "$root"/compiler/arch/*.lua "$root/examples/llama.lua"; do
  name=$(basename "$src")
  archs="$archs ${name%.lua}"
  cmp -s "$src" "$prefix/share/kiln/arch/$name" || arch_bad="$arch_bad $name"
done
[ -z "$arch_bad" ] && [ "$(ls "$prefix/share/kiln/arch" | wc -l)" = "$(echo $archs | wc -w)" ] &&
  ok "share/kiln/arch/ holds the descriptions of$archs" || bad "share/kiln/arch/: missing or different:$arch_bad"

# --- the man page ------------------------------------------------------------
"$kiln" --help >"$work/help.txt"
# the page's text: roff requests dropped, escapes undone, whitespace collapsed
sed -e '/^\.[A-Za-z]/d' -e '/^\.\\"/d' "$man" | sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\e/\\/g' |
  tr -s ' \t\n' '   ' >"$work/man.txt"
lost=0
while IFS= read -r line; do
  case "$line" in "" | "usage: "* | [!\ ]*:) continue ;; esac # blank, synopsis, headings
  l=$(printf '%s' "$line" | tr -s ' \t' '  ' | sed 's/^ //')
  grep -qF -- "$l" "$work/man.txt" || { [ $lost -lt 5 ] && echo "  not in kiln.1: $l"; lost=$((lost + 1)); }
done <"$work/help.txt"
options=$(grep -oE '(^|[ ,(])--?[a-zA-Z][a-zA-Z0-9-]*' "$work/help.txt" | sed 's/^[ ,(]//' | sort -u)
nopt=0
for o in $options; do
  nopt=$((nopt + 1))
  grep -qF -- "$o" "$work/man.txt" || { echo "  option $o not in kiln.1"; lost=$((lost + 1)); }
done
[ $lost = 0 ] && [ $nopt -gt 30 ] && ok "kiln.1 holds every line of kiln --help ($(wc -l <"$work/help.txt") lines, $nopt options)" ||
  bad "kiln.1 lost $lost lines or options of kiln --help ($nopt options)"
sections=""
for s in 'TH KILN 1 .*' 'SH NAME' 'SH SYNOPSIS' 'SH DESCRIPTION' 'SH OPTIONS' 'SH EXIT STATUS' 'SH FILES'; do
  grep -qx "\\.$s" "$man" || sections="$sections .$s"
done
grep -q '^\\fBkiln\\fR compile MODEL' "$man" && ! grep -q '@[A-Z]*@' "$man" && [ -z "$sections" ] &&
  ok "kiln.1 has NAME, SYNOPSIS (one line per command), DESCRIPTION, OPTIONS, EXIT STATUS, FILES" ||
  bad "kiln.1 sections:$sections missing, or a synopsis line or a placeholder is wrong"
if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$man" >"$work/groff.log" 2>&1 && [ ! -s "$work/groff.log" ] &&
    ok "groff -man -ww reads kiln.1 without a warning" || { bad "groff warns on kiln.1"; head -5 "$work/groff.log"; }
fi

# --- examples/cmake against the prefix -------------------------------------
raw_tail "$fixture/test_data_set_0/input_0.pb" "$work/in.f32" &&
  raw_tail "$fixture/test_data_set_0/output_0.pb" "$work/want.f32" || { bad "fixture .pb layout"; finish; }
close "$work/in.f32" "$work/want.f32" >/dev/null && { bad "the comparison cannot fail"; finish; }
cp "$fixture/model.onnx" "$work/model.onnx" # a copy, to touch
# example NAME CMAKE_ARGS...: configure, build and check the app; its build folder is WORK/NAME
example() {
  local name=$1 dir=$work/$1
  shift
  if ! cmake -S "$root/examples/cmake" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" -DEXAMPLE_MODEL="$work/model.onnx" \
         "$@" >"$dir.configure.log" 2>&1; then
    bad "$name: examples/cmake does not configure"; tail -20 "$dir.configure.log"; return 1
  fi
  if ! cmake --build "$dir" >"$dir.build.log" 2>&1; then
    bad "$name: examples/cmake does not build"; tail -20 "$dir.build.log"; return 1
  fi
  "$dir/encoder_app" "$work/in.f32" "$dir/out.f32" >"$dir.run.log" 2>&1 &&
    d=$(close "$dir/out.f32" "$work/want.f32") && ok "$name: encoder_app agrees with PyTorch ($d): $(cat "$dir.run.log")" ||
    { bad "$name: encoder_app vs PyTorch: $d"; cat "$dir.run.log"; return 1; }
}
# rebuild NAME WHAT: the build runs kiln (1) or not (0)
reruns() {
  local n
  n=$(cmake --build "$work/$1" 2>&1 | tee "$work/$1.rebuild.log" | grep -c 'kiln: compiling')
  [ "$n" = "$2" ]
}
if example default; then
  grep -q "kiln_DIR:PATH=$cmakedir" "$work/default/CMakeCache.txt" && ok "default: find_package(kiln) found $cmakedir" ||
    bad "default: find_package(kiln) did not use the prefix ($(grep kiln_DIR "$work/default/CMakeCache.txt"))"
  reruns default 0 && ok "default: a second build runs nothing" || bad "default: a second build ran kiln again"
  touch "$work/model.onnx"
  reruns default 1 && ok "default: touching the model runs kiln again" || bad "default: the model changed, kiln did not run"
  touch "$kiln"
  reruns default 1 && ok "default: a new kiln binary runs kiln again" || bad "default: kiln changed, kiln did not run"
fi
# the build folder is a package too, no install needed
if example build_tree -DCMAKE_PREFIX_PATH="$build"; then
  grep -q "kiln_DIR:PATH=$build\$" "$work/build_tree/CMakeCache.txt" && ok "build_tree: find_package(kiln) found $build" ||
    bad "build_tree: not built from $build's package"
fi
if example blob_threads2 -DEXAMPLE_WEIGHTS_MODE=blob -DEXAMPLE_THREADS=2; then
  out=$work/blob_threads2/kiln_models/encoder
  [ -f "$out/encoder.weights.bin" ] && grep -q incbin "$out/encoder_weights.S" && grep -q 'kiln_threads_n = 2;' "$out/encoder.c" &&
    nm "$work/blob_threads2/encoder_app" | grep ' encoder_weights_blob$' >/dev/null &&
    nm "$work/blob_threads2/encoder_app" | grep ' U pthread_create' >/dev/null &&
    ok "blob_threads2: the blob is linked in by encoder_weights.S, the app starts kiln's thread pool" ||
    bad "blob_threads2: no blob, no .incbin, not 2 threads or no thread pool in the app"
fi

# --- kiln_add_model's other keywords, and its errors -------------------------
proj=$work/options
mkdir -p "$proj"
cat >"$proj/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(options C)
find_package(kiln REQUIRED)
kiln_add_model(TARGET bert_tiny NAME tiny MODEL $root/examples/bert.lua SET preset=tiny seq=8
               QUANTIZE int8 ISA avx2 THREADS 2 DEPENDS $root/compiler/lua/nn.lua OPTIONS --fold-limit=1000000 -v)
kiln_add_model(TARGET enc MODEL $work/model.onnx SHAPES src=2x16x64 WEIGHTS_MODE inline)
add_executable(options_app app.c)
target_link_libraries(options_app PRIVATE bert_tiny enc)
EOF
cat >"$proj/app.c" <<'EOF'
#include <math.h>
#include <stdio.h>
#include "enc.h"
#include "tiny.h"
static int64_t ids[1][8] = {{2, 5, 9, 4, 7, 3, 8, 6}}, mask[1][8] = {{1, 1, 1, 1, 1, 1, 1, 1}}, types[1][8];
static float hidden[1][8][64], pooled[1][64], src[2][16][64], out[2][16][64];
int main(void) {
#ifdef TINY_WEIGHTS_SIZE
  if (tiny_bind_linked_weights() != KILN_OK) return 1;
#endif
  tiny_run(ids, mask, types, hidden, pooled);
  enc_run(src, out);
  double s = 0;
  for (int i = 0; i < 64; i++) s += fabsf(pooled[0][i]);
  printf("tiny: sum |pooled| %.6f\n", s);
  return !(s > 0 && isfinite(s));
}
EOF
if cmake -S "$proj" -B "$proj/build" -DCMAKE_PREFIX_PATH="$prefix" >"$proj.log" 2>&1 &&
   cmake --build "$proj/build" >>"$proj.log" 2>&1 && "$proj/build/options_app" >>"$proj.log" 2>&1; then
  gen=$proj/build/kiln_models/bert_tiny
  grep -q 'int8_t' "$gen/tiny.c" && grep -q 'kiln_threads_n = 2;' "$gen/tiny.c" && grep -q '\[1\]\[8\]' "$gen/tiny.h" &&
    [ ! -e "$proj/build/kiln_models/enc/enc.weights.bin" ] &&
    ok "a .lua model with SET, QUANTIZE int8, ISA, THREADS 2, NAME, DEPENDS, OPTIONS and an .onnx with SHAPES link into one app ($(tail -1 "$proj.log"))" ||
    bad "options: the generated code does not show SET/QUANTIZE/THREADS/WEIGHTS_MODE inline"
else
  bad "options: the project does not configure, build or run"; tail -20 "$proj.log"
fi

# expect_error 'kiln_add_model(...)' 'message': configure fails with it
expect_error() {
  local dir=$work/bad$((++nbad))
  mkdir -p "$dir"
  printf 'cmake_minimum_required(VERSION 3.20)\nproject(bad C)\nfind_package(kiln REQUIRED)\n%s\n' "$1" >"$dir/CMakeLists.txt"
  if cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" >"$dir.log" 2>&1; then
    bad "configure accepted: $1"
  elif tr -s ' \n' '  ' <"$dir.log" | grep -qF -- "$2"; then
    ok "refused: $1"
  else
    bad "wrong message for: $1"; cat "$dir.log"
  fi
}
nbad=0
expect_error 'kiln_add_model(TARGET m)' 'kiln_add_model: TARGET m: no MODEL; expected MODEL file.onnx, file.lua or file.kir'
expect_error "kiln_add_model(TARGET m MODEL $work/model.onnx THREADS 0)" 'kiln_add_model: THREADS 0: expected a thread count from 1 to 1024'
expect_error "kiln_add_model(TARGET m MODEL $work/model.onnx SET seq=4)" 'kiln_add_model: MODEL '"$work"'/model.onnx: WEIGHTS and SET are for .lua models; expected a .lua MODEL'
expect_error "kiln_add_model(TARGET m MODEL $work/nope.onnx)" "kiln_add_model: MODEL $work/nope.onnx: no such file; expected an existing"
expect_error "kiln_add_model(TARGET my-model MODEL $work/model.onnx)" 'kiln_add_model: NAME my-model: the API prefix must be a C identifier'
expect_error "kiln_add_model(TARGET m MODEL $work/model.onnx WEIGHTS_MODE big FOO)" "kiln_add_model: unexpected argument(s) 'FOO'"
expect_error "kiln_add_model(TARGET m MODEL $work/model.onnx SHAPES src)" 'kiln_add_model: SHAPES src: expected NAME=DIMS'
expect_error "kiln_add_model(TARGET m MODEL $work/model.onnx OPTIONS -o x.c)" 'kiln_add_model: OPTIONS -o: kiln_add_model sets the output'

# --- without CMake: pkg-config ---------------------------------------------
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH=$pcdir
  cflags=$(pkg-config --cflags kiln) libs=$(pkg-config --libs kiln) pkiln=$(pkg-config --variable=kiln kiln)
  inc=${cflags#-I}
  inc=${inc%% *}
  if [ "$(realpath "$inc" 2>/dev/null)" = "$(realpath "$prefix/include")" ] && [ -f "$inc/kiln_rt.h" ] &&
     [ "$(realpath "$pkiln")" = "$(realpath "$kiln")" ]; then
    ok "pkg-config --cflags kiln: $cflags (kiln_rt.h's folder); --variable=kiln: the installed kiln"
  else
    bad "pkg-config: --cflags '$cflags', --variable=kiln '$pkiln' (expected $prefix/include, $kiln)"
  fi
  # the README's recipe; kiln_rt.h must come from the pkg-config path
  d=""
  mkdir -p "$work/pc/gen" && cd "$work/pc" &&
    "$pkiln" compile "$work/model.onnx" --name encoder -o gen/encoder.c && rm gen/kiln_rt.h &&
    cc -std=c99 -O2 -Wall -Wextra -Werror -Igen $cflags "$root/examples/cmake/app.c" gen/encoder.c $libs -o app &&
    ./app "$work/in.f32" out.f32 >run.log && d=$(close out.f32 "$work/want.f32") &&
    ok "pkg-config build (kiln_rt.h from --cflags): app agrees with PyTorch ($d)" ||
    bad "pkg-config build: ${d:-does not build or run}"
  cd "$work" || exit 1
else
  bad "pkg-config not installed (tools/setup-debian.sh installs it)"
fi
finish
