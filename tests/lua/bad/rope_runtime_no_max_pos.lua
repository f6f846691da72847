-- Runtime positions need the tables' size: max_pos.
-- expect: rope_runtime_no_max_pos.lua:5: rope: positions are computed at run time and max_pos is not given
local q = input{"q", {1, 2, 4, 8}}
local pos = input{"pos", {1, 4}, "i64"}
output(q:rope{positions = pos}, "y")
