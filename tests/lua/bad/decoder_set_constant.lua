-- e:set stores what encode computes from its inputs, not a constant.
-- expect: decoder_set_constant.lua:6: set 'k': the value is a constant; expected one computed from encode's inputs
decoder{ctx = 8, prefill = 2,
  encode = function(e)
    local src = input{"src", {4}, "f32"}
    e:set("k", const({1, 2, 3}, "f32"))
  end,
  forward = function(x) return param{"emb", {10, 4}}:gather(x.tokens):gather(x.last) end}
