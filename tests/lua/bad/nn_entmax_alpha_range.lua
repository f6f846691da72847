-- nn.entmax_attention's alpha: a number in [1, 2].
-- expect: nn_entmax_alpha_range.lua:5: nn.entmax_attention: alpha is 2.5; expected a number in [1, 2], "learned" or a tensor of the 4 heads' values [4]
local nn = require "nn"
local x = input{"x", {1, 8, 64}}
output(nn.entmax_attention("attn", x, {heads = 4, alpha = 2.5}), "y")
