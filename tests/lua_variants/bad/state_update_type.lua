-- ERROR: state_update_type.lua:5: state_update: state 'mem' is f32[1,4] and the new value is f32[1,3]; expected the same type
local x = input{"x", {1, 3}}
local mem = state{"mem", {1, 4}}
output(x, "y")
state_update(mem, x)
