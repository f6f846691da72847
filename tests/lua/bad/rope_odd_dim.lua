-- The rotated dims come in pairs.
-- expect: rope_odd_dim.lua:4: rope: dim is 5 with heads of 8; expected an even number from 2 to 8
local q = input{"q", {1, 2, 4, 8}}
output(q:rope{dim = 5}, "y")
