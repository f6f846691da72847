-- normalizer and alpha say the same thing twice.
-- expect: nn_entmax_alpha_normalizer.lua:5: nn.entmax_attention: both normalizer and alpha; expected one of them
local nn = require "nn"
local x = input{"x", {1, 8, 64}}
output(nn.entmax_attention("attn", x, {heads = 4, normalizer = "sparsemax", alpha = 1.3}), "y")
