-- expect: pattern_gsub.lua:3: string.gsub: pattern too costly for a subject of 5000 bytes
local x = input{"x", {1, 4}}
local s = string.rep("a", 5000):gsub("a*a*a*b", "")
output(x, "y")
