-- Options are a table: nn.layer_norm's eps goes in {eps = ...}.
-- expect: nn_option_not_table.lua:5: nn.layer_norm: the options argument is a number; expected a table {eps = ...}
local nn = require "nn"
local x = input{"x", {2, 8}}
output(nn.layer_norm("ln", x, 1e-6), "y")
