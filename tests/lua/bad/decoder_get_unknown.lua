-- x:get names a value encode stored.
-- expect: decoder_get_unknown.lua:9: get 'memory_v': encode stored no value of that name; expected one of e:set's names (memory_k)
decoder{ctx = 8, prefill = 2,
  encode = function(e)
    local src = input{"src", {4}, "f32"}
    e:set("memory_k", (src * 2):reshape(1, 4))
  end,
  forward = function(x)
    local v = x:get("memory_v")
    return param{"emb", {10, 4}}:gather(x.tokens):gather(x.last) + v
  end}
