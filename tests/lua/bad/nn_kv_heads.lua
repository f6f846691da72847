-- Grouped-query attention: kv_heads must divide heads.
-- expect: nn_kv_heads.lua:5: nn.multi_head_attention: 6 heads and 4 kv_heads; expected kv_heads dividing heads
local nn = require "nn"
local x = input{"x", {1, 8, 48}}
output(nn.multi_head_attention("attn", x, {heads = 6, kv_heads = 4, names = "separate"}), "y")
