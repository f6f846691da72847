-- The weights file has no tensor for a param.
-- args: --weights @DIR/small.safetensors
-- expect: missing_weight.lua:7: param 'proj.bias':
local x = input{"x", {2, 4}}
local w = param{"proj.weight", {3, 4}}
local b = param{"bias", {3}}
local c = param{"proj.bias", {3}}
output(x:matmul(w:transpose()) + b + c, "y")
