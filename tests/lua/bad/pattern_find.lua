-- Four lazy quantifiers on 5000 bytes: ~10^19 matcher steps, refused up front.
-- expect: pattern_find.lua:4: string.find: pattern too costly for a subject of 5000 bytes
local x = input{"x", {1, 4}}
local i = string.rep("a", 5000):find(".-.-.-.-b")
output(x, "y")
