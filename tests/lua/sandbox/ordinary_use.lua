-- The sandbox's guards (pattern cost, string.rep, table spans, no __gc)
-- let ordinary string and table work through unchanged.
local x = input{"x", {1, 4}}
local k, v = ("dim=64"):match("^(%w+)=(%w+)$")
assert(k == "dim" and v == "64")
assert((" a  b "):gsub("%s+", " ") == " a b ")
local n = 0
for _ in ("one two three"):gmatch("%a+") do n = n + 1 end
assert(n == 3 and ("abc"):find("b", 1, true) == 2 and ("f(a(b))"):match("%b()") == "(a(b))")
assert(("x_12"):find("%f[%d]%d+") == 3 and ("a]b"):find("[]]") == 2)
assert(#string.rep("ab", 1000, ",") == 2999)
local t = {3, 1, 2}
table.sort(t); assert(t[1] == 1 and t[3] == 3)
table.sort(t, function(a, b) return a > b end); assert(t[1] == 3)
assert(table.concat({1, 2, 3}, ",") == "1,2,3" and select("#", table.unpack({1, 2})) == 2)
table.insert(t, 4); assert(table.remove(t) == 4)
assert(#table.move({1, 2, 3}, 1, 3, 2, {}) == 4)
local c = const({{1, 2}, {3, 4}})
assert(c.dtype == "i64" and c.shape[1] == 2 and c.shape[2] == 2)
assert(const({true, false}).dtype == "bool" and const({1, 2.5}).dtype == "f32")
assert(const(3).rank == 0 and const({}).shape[1] == 0 and const({{}, {}}).shape[2] == 0)
assert(const({1, 2}, "f32").dtype == "f32")
assert(setmetatable({}, {__index = function() return 1 end}).z == 1)
assert(arange(0, 10, 3).shape[1] == 4 and arange(0, 1, 0.25).dtype == "f32")
output(x + c:sum():cast("f32"), "y")
