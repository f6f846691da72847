-- Rows of different lengths.
-- expect: const_ragged.lua:4: const: ragged nested table
local x = input{"x", {1, 4}}
local c = const({{1, 2}, {3}})
output(x, "y")
