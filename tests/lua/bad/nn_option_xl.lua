-- An option nn.xl_layer does not know, though its attention would take a mask.
-- expect: nn_option_xl.lua:6: nn.xl_layer: unknown option 'mem_len'; expected one of heads, d_head, d_ff, mask, key_mask, eps, seed
local nn = require "nn"
local x = input{"x", {1, 4, 16}}
local mem = state{"mem", {1, 4, 16}}
local h = nn.xl_layer("l0", x, mem, {heads = 2, d_head = 8, d_ff = 32, mem_len = 4})
state_update(mem, nn.xl_memory(mem, h))
output(h, "y")
