-- nn.encoder takes its layers' options and its own.
-- expect: nn_option_encoder.lua:6: nn.encoder: unknown option 'norm_first'; expected one of heads, d_ff, mask, pre_norm, activation, eps, seed, layers, final_norm
local nn = require "nn"
local x = input{"x", {1, 8, 32}}
local ok = nn.encoder("enc", x, {layers = 1, heads = 4, d_ff = 64, final_norm = true})
output(nn.encoder("enc2", ok, {layers = 1, heads = 4, d_ff = 64, norm_first = true}), "y")
