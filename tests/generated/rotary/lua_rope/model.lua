-- x:rope{...}: both pairings, the second partial (tools/make_rotary_cases.py)
local q = input{"q", {1, 4, 5, 16}}
local pos = input{"pos", {1, 5}, "i64"}
local a = q:rope{positions = pos, theta = 1e5, max_pos = 32}
local b = q:rope{positions = pos, theta = 10000, max_pos = 16, interleaved = true, dim = 8}
output(a, "a")
output(b, "b")
