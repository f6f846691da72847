-- sem_topk.lua — nn.topk_softmax on given scores, for semantics.py: each
-- row keeps exactly k probabilities, those of its k largest scores.
local nn = require "nn"
local cfg = config{ k = 4 }
local scores = input{"scores", {2, 3, 10}}
output(nn.topk_softmax(scores, cfg.k), "probs")
output(nn.topk_softmax(scores, 10), "all")
