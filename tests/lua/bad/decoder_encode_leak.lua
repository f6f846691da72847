-- A value encode computed is used by forward directly instead of through
-- e:set / x:get: each node must belong to one entry point.
-- expect: decoder_encode_leak.lua:13: here); expected each node in one entry point
-- expect: reads values of both the prefill and the encode entry
local m
decoder{ctx = 8, prefill = 2,
  encode = function(e)
    local src = input{"src", {4}, "f32"}
    m = src * 2
    e:set("m", m)
  end,
  forward = function(x)
    local h = param{"emb", {10, 4}}:gather(x.tokens) + m:reshape(1, 4)
    return h:gather(x.last)
  end}
