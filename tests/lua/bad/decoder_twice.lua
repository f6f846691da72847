-- A second decoder{} in one model.
-- expect: decoder_twice.lua:5: decoder: a second decoder{}; expected one per model
local f = function(x) return param{"w", {4, 8}}:gather(x.tokens) end
decoder{ctx = 8, prefill = 4, forward = f}
decoder{ctx = 8, prefill = 4, forward = f}
