-- ERROR: topk_too_many.lua:4: nn.topk_softmax: k 12 is more than the 10 scores in a row
local nn = require "nn"
local s = input{"s", {2, 10}}
output(nn.topk_softmax(s, 12), "p")
