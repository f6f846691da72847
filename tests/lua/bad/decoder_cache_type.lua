-- The same cache name with rows of another shape in one entry.
-- expect: decoder_cache_type.lua:6: cache 'k' is f32[8,2] and these rows make it f32[8,3]; expected the same cache in every entry
decoder{ctx = 8, prefill = 4, forward = function(x)
  local e = param{"w", {4, 2}}
  x:cache("k", e:gather(x.tokens))
  x:cache("k", param{"w3", {4, 3}}:gather(x.tokens))
  return e
end}
