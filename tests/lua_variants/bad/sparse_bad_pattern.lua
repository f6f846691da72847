-- ERROR: sparse_bad_pattern.lua:4: nn.sparse_mask: pattern 'dilated'; expected "strided" or "fixed"
local nn = require "nn"
local x = input{"x", {1, 8, 16}}
local m = nn.sparse_mask(8, {pattern = "dilated", stride = 2})
