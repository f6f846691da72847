-- A missing closing brace: Lua's parser reports it, at the line it gives up.
-- expect: syntax_error.lua:6: '}' expected (to close '{' at line 5)
local x = input{"x", {1, 8}}
local w = param{"w", {8, 8}}
local y = {x:matmul(w)
output(y, "y")
