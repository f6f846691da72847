-- Moving 2^50 nils: no memory grows, no Lua step runs.
-- expect: table_move.lua:4: table.move: 1125899906842624 elements
local x = input{"x", {1, 4}}
table.move({}, 1, 1 << 50, 1, {})
output(x, "y")
