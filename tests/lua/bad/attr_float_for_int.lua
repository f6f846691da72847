-- op() with a float where ONNX has an int: refused at the line, not read
-- as the default axis (a whole float such as 2 / 2 is taken as the int)
-- expect: attr_float_for_int.lua:6: Softmax: attribute 'axis' is a float; expected an int
local x = input{"x", {2, 3}}
local ok = op("Softmax", {x}, {axis = 2 / 2})
output(op("Softmax", {x}, {axis = 0.5}), "y")
