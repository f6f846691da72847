-- A bad argument to an nn layer is reported at the script's line.
-- expect: nn_heads.lua:5: nn.multi_head_attention: d_model 64 is not divisible by 5 heads
local nn = require "nn"
local x = input{"x", {1, 8, 64}}
local y = nn.multi_head_attention("attn", x, {heads = 5})
output(y, "y")
