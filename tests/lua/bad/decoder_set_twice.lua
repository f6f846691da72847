-- Each stored value has a name of its own.
-- expect: decoder_set_twice.lua:7: set 'k': the name is taken; expected one e:set per name
decoder{ctx = 8, prefill = 2,
  encode = function(e)
    local src = input{"src", {4}, "f32"}
    e:set("k", src * 2)
    e:set("k", src * 3)
  end,
  forward = function(x) return param{"emb", {10, 4}}:gather(x.tokens):gather(x.last) + x:get("k"):reshape(1, 4) end}
