-- nn.entmax_attention's alpha as a tensor: one value per head.
-- expect: nn_entmax_alpha_shape.lua:6: nn.entmax_attention: alpha is a tensor of shape [3]; expected a number in [1, 2], "learned" or a tensor of the 4 heads' values [4]
local nn = require "nn"
local x = input{"x", {1, 8, 64}}
local alpha = param{"attn.alpha", {3}, init = 1.5}
output(nn.entmax_attention("attn", x, {heads = 4, alpha = alpha}), "y")
