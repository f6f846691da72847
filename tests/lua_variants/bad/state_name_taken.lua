-- ERROR: state_name_taken.lua:3: state: the name 'x' is taken; expected each input, param and state to have its own name
local x = input{"x", {1, 4}}
local mem = state{"x", {1, 4}}
