#!/bin/sh
# check_includes.sh — the layering rule of STYLE.md ("Includes point down
# the layers"), checked on every quoted #include of every .c, .h and .def
# under compiler/. Each folder of compiler/ is a floor; a file may include
# the files of its own folder and what its floor's row below names, nothing
# else. An include is a path from the including file's folder
# ("../ir/ops.h"); one that names no file under compiler/ fails, except the
# generated onnx.pb-c.h where a row names it. A file in no floor (at the top
# of compiler/, or in a folder the table lacks) fails, and so does a row
# that names a floor above its own. Prints each violation; exits 1 if there
# is one.
# usage: check_includes.sh [SOURCE_ROOT]
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root/compiler" || exit 1

# The floors, bottom first, and what each may include besides its own
# folder: a floor (any of its files) or one file of it.
FLOORS='
base      -
ir        base
formats   base ir
emit      base ir formats
kernels   base ir/ir.h ir/blockquant.h emit/emit.h emit/emit_api.h
ops       base ir emit/emit.h emit/emit_api.h emit/templates.h kernels
passes    base ir ops
frontend  base ir onnx.pb-c.h
lua       base ir formats emit/templates.h ops
export    base ir ops passes frontend onnx.pb-c.h
cmd       base ir formats emit frontend lua passes export
'
# base/: arena, Buf, Diag, files, C text; knows nothing of the IR.
# ir/: the IR, the op table (ops.h, ops.def, onnx_versions.def, fold_node),
#   build.h, the .kir printer, ggml's block formats.
# formats/: weight files (GGUF, safetensors) read into IR tensors.
# emit/: the emitter: emit.h/emit_api.h (what a generator writes C with),
#   the file writer, kernels as static functions, C names, the weights blob,
#   the tokenizer's tables. Inside it the rows below keep the order
#   pool_rule (text only) < emit_text < emit_kernel (the Emit types of
#   emit.h only) < emit.c
#   (references, weight names) < emit_weights, emit_forward (bodies, layer
#   loops; it reads emit_pack.h's plan, a struct) < emit_pack (which calls
#   run once over a pack of sentences) < emit_decoder < emit_file: no file
#   calls back up into the file writer.
# kernels/: generators that take a spec struct, never a Node: not ops.h.
# ops/: op semantics (_infer, _eval, _emit), reached from above only
#   through the op table (ops.h).
# passes/: the pass list; a pass may include an ops/ header for what an op
#   tells the pass that builds it.
# frontend/: ONNX import (onnx.pb-c.h), the .kir parser, tensor files.
# lua/: the Lua frontend. export/: kiln export. cmd/: the commands.
#
# Files whose includes are narrower than their floor's (the whole list,
# their own folder included): the headers lower floors read.
FILES='
ir/ir.h          base
ir/ir.c          base ir/ir.h ir/ops.h
ir/ops.h         base ir/ir.h ir/ops.def
ir/blockquant.h  base ir/ir.h
emit/emit.h      emit/emit_api.h
emit/emit_api.h  ir/ir.h
emit/templates.h -
emit/emit_text.h    base ir/ir.h
emit/emit_text.c    base ir/ir.h emit/emit_text.h
emit/pool_rule.h    -
emit/pool_rule.c    emit/pool_rule.h
emit/emit_kernel.c  base ir emit/emit_kernel.h emit/emit.h emit/emit_api.h emit/cnames.h emit/pool_rule.h
emit/emit.c         base ir emit/emit.h emit/emit_api.h emit/emit_kernel.h emit/emit_text.h emit/cnames.h emit/templates.h
emit/emit_weights.c base ir emit/emit_weights.h emit/emit.h emit/emit_api.h emit/emit_text.h emit/weights_blob.h
emit/emit_forward.c base ir emit/emit_forward.h emit/emit.h emit/emit_api.h emit/emit_kernel.h emit/emit_text.h emit/cnames.h emit/emit_pack.h
emit/emit_pack.h    emit/emit.h
'

find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sed 's|^\./||' | sort |
FLOORS=$FLOORS FILES=$FILES awk '
function table(text, arr, order,   n, lines, i, f, k, key, rest) {
  n = split(text, lines, "\n")
  k = 0
  for (i = 1; i <= n; i++) {
    if (split(lines[i], f, " ") == 0)
      continue
    key = f[1]
    rest = lines[i]
    sub(/^[ \t]*[^ \t]+[ \t]*/, "", rest)
    arr[key] = rest == "-" ? "" : rest
    if (order != "")
      floor_at[key] = ++k
  }
}
# a/b/../c/./d -> a/c/d (or "" when it climbs out of compiler/)
function norm(p,   n, parts, out, m, i, s) {
  n = split(p, parts, "/")
  m = 0
  for (i = 1; i <= n; i++) {
    if (parts[i] == "" || parts[i] == ".")
      continue
    if (parts[i] == "..") {
      if (m == 0)
        return ""
      m--
      continue
    }
    out[++m] = parts[i]
  }
  s = ""
  for (i = 1; i <= m; i++)
    s = s (i > 1 ? "/" : "") out[i]
  return s
}
function folder(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "" }
# does the list (space-separated floors and files) allow target t?
function allows(list, t,   n, e, i) {
  n = split(list, e, " ")
  for (i = 1; i <= n; i++)
    if (e[i] == t || e[i] == folder(t))
      return 1
  return 0
}
BEGIN {
  table(ENVIRON["FLOORS"], may, "ordered")
  table(ENVIRON["FILES"], narrow, "")
  bad = 0
  # the table itself points down: a row names only floors above it in the list
  for (fl in may) {
    n = split(may[fl], e, " ")
    for (i = 1; i <= n; i++) {
      t = e[i] ~ /\// ? folder(e[i]) : e[i]
      if (e[i] == "onnx.pb-c.h")
        continue
      if (!(t in floor_at) || floor_at[t] >= floor_at[fl]) {
        printf "check_includes.sh: floor %s may include %s, which is no floor below it\n", fl, e[i]
        bad = 1
      }
    }
  }
}
{
  f = $0
  fl = folder(f)
  if (!(fl in floor_at)) {
    printf "%s: in no floor (every file of compiler/ is in one of the folders of tests/layering/check_includes.sh)\n", f
    bad = 1
    next
  }
  line = 0
  while ((getline s < f) > 0) {
    line++
    if (s !~ /^[ \t]*#[ \t]*include[ \t]*"/)
      continue
    inc = s
    sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
    sub(/".*/, "", inc)
    t = norm(fl "/" inc)
    if (inc == "onnx.pb-c.h") {
      t = inc
    } else if (t == "" || (getline probe < t) < 0) {
      printf "%s:%d: includes \"%s\", which is no file under compiler/ (write the path from the file'"'"'s folder: \"../ir/ops.h\")\n", f, line, inc
      bad = 1
      continue
    } else
      close(t)
    if (f in narrow)
      ok = allows(narrow[f], t)
    else
      ok = folder(t) == fl || allows(may[fl], t)
    if (!ok) {
      printf "%s:%d: includes \"%s\" (%s may include %s: STYLE.md, tests/layering/check_includes.sh)\n", f, line, inc,
        (f in narrow) ? f : fl "/", (f in narrow ? narrow[f] : may[fl] == "" ? "its own folder only" : "its own folder and " may[fl])
      bad = 1
    }
  }
  close(f)
}
END {
  if (bad)
    exit 1
  print "includes follow the layers"
}'
