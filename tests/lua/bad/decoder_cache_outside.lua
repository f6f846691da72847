-- x:cache called on something that is not forward's table.
-- expect: decoder_cache_outside.lua:5: cache: called on a string; expected x:cache(...) on the table forward() was given
decoder{ctx = 8, prefill = 4, forward = function(x)
  local k = param{"w", {4, 2}}:gather(x.tokens)
  x.cache("oops", "k", k)
  return k
end}
