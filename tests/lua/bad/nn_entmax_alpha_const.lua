-- A constant per-head alpha outside [1, 2] is refused at compile time by the Entmax op.
-- expect: nn_entmax_alpha_const.lua:7:
-- expect: Entmax: Alpha
-- expect: element 2 is 2.5; expected 1 <= alpha <= 2 (1: softmax, 2: sparsemax)
local nn = require "nn"
local x = input{"x", {1, 8, 64}}
output(nn.entmax_attention("attn", x, {heads = 4, alpha = const({1.1, 1.5, 2.5, 2.0})}), "y")
