-- encode must declare the source it encodes.
-- expect: decoder_encode_no_input.lua:4: decoder: encode declared no input; expected the source as input{...} inside encode
local w = param{"w", {1, 4}}
decoder{ctx = 8, prefill = 2,
  encode = function(e) end,
  forward = function(x) return param{"emb", {10, 4}}:gather(x.tokens):gather(x.last) end}
