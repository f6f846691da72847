-- expect: gguf_meta: no GGUF file is bound (key 'llama.block_count'); expected weights("FILE.gguf")
local n = gguf_meta("llama.block_count")
output(input{"x", {1}}, "y")
