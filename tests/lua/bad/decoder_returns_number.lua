-- forward must return the logits tensor.
-- expect: decoder_returns_number.lua:3: decoder: forward returned a number; expected the logits tensor of the last real token
decoder{ctx = 8, prefill = 4, forward = function(x) return 3 end}
