-- An nn layer called without its params' name prefix.
-- expect: nn_no_name.lua:5: nn.linear: the first argument is a userdata; expected the params' name prefix
local nn = require "nn"
local x = input{"x", {1, 8, 64}}
local y = nn.linear(x, 64)
output(y, "y")
