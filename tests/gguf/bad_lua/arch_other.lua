-- args: --weights @DIR/tiny_llama.gguf
-- expect: gguf_arch: 
-- expect: tiny_llama.gguf is a 'llama' model (general.architecture), and this description is for 'qwen2' (it reads the qwen2.* keys)
local arch = gguf_arch("qwen2")
output(input{"x", {1}}, "y")
