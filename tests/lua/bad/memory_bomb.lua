-- A table that grows without end: the allocator's cap stops it.
-- args: --lua-mem=32
-- expect: memory_bomb.lua:8: the script allocated more than 32 MiB
local x = input{"x", {1, 4}}
local hoard = {}
local i = 0
while true do
  i = i + 1; hoard[i] = string.rep("x", 1 << 16) .. i
end
output(x, "y")
