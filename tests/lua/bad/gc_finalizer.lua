-- A finalizer that never ends would run at lua_close, past every limit.
-- expect: gc_finalizer.lua:4: setmetatable: the metatable has a __gc field
local x = input{"x", {1, 4}}
setmetatable({}, {__gc = function() while true do end end})
output(x, "y")
