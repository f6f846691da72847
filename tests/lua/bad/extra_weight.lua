-- The weights file holds a tensor no param uses.
-- args: --strict-weights
-- expect: extra_weight.lua:6: weights:
-- expect: small.safetensors: tensor 'bias' (f32[3]) is not a parameter
local x = input{"x", {2, 4}}
weights("small.safetensors")
local w = param{"proj.weight", {3, 4}}
output(x:matmul(w:transpose()), "y")
