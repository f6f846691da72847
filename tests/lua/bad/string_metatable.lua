-- string's metatable is hidden: a script cannot reroute ("x"):format.
-- expect: string_metatable.lua:4: attempt to index a boolean value
local mt = getmetatable("")
mt.__index = {format = function() return "hacked" end}
