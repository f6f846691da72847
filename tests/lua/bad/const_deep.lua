-- 100000 levels of nesting: refused at the ninth, not walked for minutes.
-- expect: const_deep.lua:6: const: the table is nested deeper than 8
local x = input{"x", {1, 4}}
local t = {1}
for i = 1, 100000 do t = {t} end
local c = const(t)
output(x, "y")
