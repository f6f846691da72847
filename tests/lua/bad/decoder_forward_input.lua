-- forward's inputs are x.tokens, x.start and x.count: input{} belongs in encode.
-- expect: decoder_forward_input.lua:3: decoder: forward declared input 'extra'; expected inputs only in encode
decoder{ctx = 8, prefill = 2, forward = function(x)
  local extra = input{"extra", {4}, "f32"}
  return param{"emb", {10, 4}}:gather(x.tokens):gather(x.last) + extra:reshape(1, 4)
end}
