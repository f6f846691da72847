-- 7 levels of one shared row of 200: little Lua memory, 200^7 elements.
-- expect: const_shared_rows.lua:6: const: 12800000000000000 elements; expected at most 512 MiB
local x = input{"x", {1, 4}}
local t = 1
for i = 1, 7 do local r = {} for j = 1, 200 do r[j] = t end t = r end
local c = const(t)
output(x, "y")
