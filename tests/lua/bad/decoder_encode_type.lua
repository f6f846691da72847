-- encode is a function of the entry table.
-- expect: decoder_encode_type.lua:3: decoder: encode is a string; expected function(e)
decoder{ctx = 8, prefill = 2, encode = "src",
  forward = function(x) return param{"emb", {10, 4}}:gather(x.tokens):gather(x.last) end}
