-- A tensor in the weights file has another shape than its param.
-- args: --weights @DIR/small.safetensors
-- expect: wrong_weight_shape.lua:5: param 'proj.weight':
local x = input{"x", {2, 4}}
local w = param{"proj.weight", {4, 3}}
local b = param{"bias", {3}}
output(x:matmul(w) + b, "y")
