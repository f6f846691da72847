-- Lua itself refuses widths past two digits.
-- expect: format_width.lua:4: invalid conversion
local x = input{"x", {1, 4}}
local s = string.format("%99999999d", 1)
output(x, "y")
