-- Errors a script catches (pcall) half way through building a node: the
-- half-built node never reaches the graph, the script goes on, and the
-- model compiles (docs/lua.md, "The sandbox").
local x = input{"x", {2, 8}}
local w = param{"w", {4, 8}}
assert(not pcall(function() return x:matmul(w) end))                        -- shape error
assert(not pcall(function() return op("Gemm", {x, x}, {alpha = {1, "a"}}) end)) -- bad attribute
assert(not pcall(function() return op("Softmax", {x}, {axis = {"a", 1}}) end))
assert(not pcall(function() return op("Softmax", {x}, {[1] = 2}) end))
assert(not pcall(function() return const({{1, 2}, {3}}) end))
local y = x:matmul(w:transpose()):relu() + 1
output(y, "y")
