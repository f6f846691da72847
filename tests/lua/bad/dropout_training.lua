-- Training-mode Dropout with a non-zero ratio is random: refused (ratio 0 is the identity).
-- expect: dropout_training.lua:6: Dropout: training_mode is true with ratio 0.25; expected ratio 0 (training-mode dropout is random; kiln compiles inference)
local x = input{"x", {2, 4}}
local same = op("Dropout", {x, const(0.0), const(true)}, {})
output(same, "same")
output(op("Dropout", {x, const(0.25), const(true)}, {}), "y")
