-- An empty string repeated 2^50 times loops 2^50 times in C.
-- expect: rep_huge.lua:4: string.rep: 1125899906842624 copies (0 bytes); expected a result within the script's memory cap of 512 MiB
local x = input{"x", {1, 4}}
local s = string.rep("", 1 << 50)
output(x, "y")
