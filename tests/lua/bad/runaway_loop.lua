-- A loop that never ends: the instruction budget stops it.
-- args: --lua-steps=5000000
-- expect: runaway_loop.lua:7: the script ran for more than 5000000 Lua steps
local x = input{"x", {1, 4}}
local n = 0
while true do
  n = n + 1
end
output(x, "y")
