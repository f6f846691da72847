-- An unknown option of nn.linear.
-- expect: nn_option_linear.lua:5: nn.linear: unknown option 'biases'; expected one of bias, seed
local nn = require "nn"
local x = input{"x", {2, 4}}
output(nn.linear("proj", x, 3, {biases = false}), "y")
