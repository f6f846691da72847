-- %b scans to the end of the subject from every position.
-- expect: pattern_gmatch.lua:4: string.gmatch: pattern too costly for a subject of 20000 bytes
local x = input{"x", {1, 4}}
for w in string.rep("(", 20000):gmatch("%b()%b()") do end
output(x, "y")
