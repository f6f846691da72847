-- table.sort with a C comparator runs no Lua step: the time budget (1 s at
-- 10^8 steps) stops it.
-- args: --lua-steps=100000000
-- expect: sort_c_comparator.lua:8: the script ran past its time budget of 1 s
local x = input{"x", {1, 4}}
local t = {}
for i = 1, 3000000 do t[i] = (i * 7919) % 1000003 end
table.sort(t, math.ult)
output(x, "y")
