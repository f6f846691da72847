-- An unknown option of a mask builder (no tensor involved).
-- expect: nn_option_sparse_mask.lua:4: nn.sparse_mask: unknown option 'patern'; expected one of pattern, stride, c, part, causal
local nn = require "nn"
local m = nn.sparse_mask(16, {stride = 4, patern = "fixed"})
output(input{"x", {16, 16}} + where(m, -1e9, 0.0), "y")
