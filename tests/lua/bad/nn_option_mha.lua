-- An unknown option of nn.multi_head_attention, the first in sorted order.
-- expect: nn_option_mha.lua:5: nn.multi_head_attention: unknown option 'dropout'; expected one of heads, kv_heads, rope, memory, mask, names, bias, scale, normalize, seed
local nn = require "nn"
local x = input{"x", {1, 8, 64}}
output(nn.multi_head_attention("attn", x, {heads = 4, head_dim = 16, dropout = 0.1}), "y")
