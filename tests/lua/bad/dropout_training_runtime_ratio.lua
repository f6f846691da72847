-- Dropout's ratio and training_mode are compile-time constants.
-- expect: dropout_training_runtime_ratio.lua:5: Dropout: input 2 ('r') must be a compile-time constant
local x = input{"x", {2, 4}}
local r = input{"r", {}}
output(op("Dropout", {x, r, const(true)}, {}), "y")
