-- ERROR: state_update_twice.lua:6: state_update: state 'mem' already has its next value; expected one state_update per state
local x = input{"x", {1, 4}}
local mem = state{"mem", {1, 4}}
output(x + mem, "y")
state_update(mem, x * 2)
state_update(mem, x * 3)
