-- forward missing.
-- expect: decoder_no_forward.lua:3: decoder: forward is a nil; expected function(x) returning the logits
decoder{ctx = 8, prefill = 4}
