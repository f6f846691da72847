-- decoder{} makes the model's inputs: none may exist before it.
-- expect: decoder_with_inputs.lua:4: decoder: the model already has inputs or outputs; expected decoder{} to make them all (its entries' tokens, and their logits)
local ids = input{"ids", {1, 4}, "i64"}
decoder{ctx = 8, prefill = 4, forward = function(x) return x.tokens end}
