-- ERROR: state_update_not_state.lua:4: state_update: 'x' is not a state; expected the tensor state{} returned
local x = input{"x", {1, 4}}
output(x * 2, "y")
state_update(x, x * 2)
