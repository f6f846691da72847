-- A names table is checked too.
-- expect: nn_option_names.lua:5: nn.feed_forward: unknown names key 'outter'; expected one of inner, outer
local nn = require "nn"
local x = input{"x", {1, 4, 8}}
output(nn.feed_forward("ff", x, 16, {names = {inner = "fc1", outter = "fc2"}}), "y")
