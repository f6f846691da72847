-- __len claims 2^40 elements: table.remove would shift them all in C.
-- expect: table_remove_len.lua:5: table.remove: 1099511627776 elements
local x = input{"x", {1, 4}}
local t = setmetatable({}, {__len = function() return 1 << 40 end})
table.remove(t, 1)
output(x, "y")
