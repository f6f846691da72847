-- ERROR: state_bad_init.lua:3: state 'mem': init has 3 values; expected 4 (the shape's element count)
local x = input{"x", {1, 4}}
local mem = state{"mem", {1, 4}, init = {1, 2, 3}}
state_update(mem, mem + x)
output(x, "y")
