-- Inner dims of a product differ: the op's own shape check, at its line.
-- expect: shape_error.lua:5: matmul:
local x = input{"x", {2, 8}}
local w = param{"w", {4, 8}}
local y = x:matmul(w)
output(y, "y")
