-- The tensors' metatable is protected: no __gc can reach every tensor.
-- expect: gc_tensor_metatable.lua:4: attempt to index a string value
local x = input{"x", {1, 4}}
getmetatable(x).__gc = function() while true do end end
output(x:relu(), "y")
