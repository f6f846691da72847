-- args: --weights @DIR/tiny_llama.gguf
-- expect: tiny_llama.gguf has no key 'llama.expert_count'; expected one of its
local n = gguf_meta("llama.expert_count")
output(input{"x", {1}}, "y")
