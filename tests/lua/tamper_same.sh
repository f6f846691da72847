#!/usr/bin/env bash
# tamper_same.sh KILN — a script that rebinds global names nn uses (pairs,
# ipairs, tostring, type, next, select, setmetatable) before it requires nn
# compiles to the same C as one that does not: bundled modules run in the
# globals as they were before the script (compiler/lua/sandbox.c). The two
# scripts differ only in their first line, so even the line numbers in the
# C's comments agree.
set -euo pipefail
kiln=$1
case $kiln in /*) ;; *) kiln=$PWD/$kiln ;; esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
body='local nn = require "nn"
local x = input{"x", {1, 8, 32}}
local y = nn.encoder("enc", x, {layers = 1, heads = 4, d_ff = 64, mask = "causal"})
output(nn.layer_norm("out", y), "y")'
mkdir -p "$dir/plain" "$dir/tampered"
printf '%s\n%s\n' '-- nothing rebound' "$body" >"$dir/plain/model.lua"
printf '%s\n%s\n' 'pairs = function() return next, {}, nil end; ipairs = pairs; tostring = function() return "?" end; type = function() return "nil" end; next = nil; select = nil; setmetatable = nil' \
  "$body" >"$dir/tampered/model.lua"
for s in plain tampered; do
  (cd "$dir/$s" && "$kiln" compile model.lua -o model.c)
done
cmp "$dir/plain/model.c" "$dir/tampered/model.c"
echo "tamper_same: the tampered script's C is the plain one's"
