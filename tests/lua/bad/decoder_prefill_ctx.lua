-- A prefill chunk longer than the cache.
-- expect: decoder_prefill_ctx.lua:3: decoder: prefill is 16 and ctx 8; expected prefill <= ctx
decoder{ctx = 8, prefill = 16, forward = function(x) return x.tokens end}
