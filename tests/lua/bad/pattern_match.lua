-- expect: pattern_match.lua:3: string.match: pattern too costly for a subject of 5000 bytes
local x = input{"x", {1, 4}}
local a, b, c = string.rep("a", 5000):match("(.-)(.-)(.-)b")
output(x, "y")
