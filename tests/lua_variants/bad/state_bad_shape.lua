-- ERROR: state_bad_shape.lua:3: state 'mem': dim 2 is 0; expected a positive integer
local x = input{"x", {1, 4}}
local mem = state{"mem", {1, 0}}
