-- A table that contains itself: const() must stop at kiln's largest rank.
-- expect: const_cycle.lua:5: const: the table is nested deeper than 8
local x = input{"x", {1, 4}}
local t = {}; t[1] = t
local c = const(t)
output(x, "y")
