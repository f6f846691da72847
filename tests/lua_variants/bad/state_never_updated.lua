-- ERROR: state_never_updated.lua: state 'mem' is never given its next value; expected state_update(state, new_value) once for it
local x = input{"x", {1, 4}}
local mem = state{"mem", {1, 4}}
output(x + mem, "y")
