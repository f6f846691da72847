-- Asking load for binary mode does not help: the sandbox forces text.
-- expect: binary_chunk_mode.lua:4: attempt to load a binary chunk
local bytecode = "\27LuaT\0\25\147\13\10\26\10\4\8\8"
local f = assert(load(bytecode, "=chunk", "b"))
local x = input{"x", {1, 4}}
output(x, "y")
