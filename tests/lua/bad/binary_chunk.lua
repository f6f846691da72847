-- Precompiled (binary) chunks are refused: load is text-only.
-- expect: binary_chunk.lua:4: attempt to load a binary chunk
local bytecode = "\27LuaT\0\25\147\13\10\26\10\4\8\8"
local f = assert(load(bytecode))
local x = input{"x", {1, 4}}
output(x, "y")
