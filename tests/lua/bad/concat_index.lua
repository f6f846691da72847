-- table.concat over 2^40 slots an __index (a C function) fills: no Lua step runs.
-- expect: concat_index.lua:5: table.concat: 1099511627776 elements; expected at most 33554432
local x = input{"x", {1, 4}}
local t = setmetatable({}, {__index = table.concat})
local s = table.concat(t, "", 1, 1 << 40)
output(x, "y")
