local x = input{"x", {2, 3}}
local w = param{"w", {65536, 65536}}
output(x + w:sum(), "y")
