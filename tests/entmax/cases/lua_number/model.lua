-- nn.entmax_attention with alpha = 1.3 (tests/entmax/make_cases.py)
local nn = require "nn"
weights("w.safetensors")
local x = input{"x", {2, 6, 16}}
output(nn.entmax_attention("attn", x, {heads = 4, alpha = 1.3}), "y")
