-- Every nn function refuses an option it does not know (here a misspelt alpha).
-- expect: nn_option_entmax.lua:5: nn.entmax_attention: unknown option 'alph'; expected one of heads, normalizer, alpha, mask, seed
local nn = require "nn"
local x = input{"x", {1, 8, 64}}
output(nn.entmax_attention("attn", x, {heads = 4, alph = 1.3}), "y")
