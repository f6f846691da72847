-- expect: gguf_arch: 'llama 2' is not an architecture's name; expected 1 to 64 letters, digits
local arch = gguf_arch("llama 2")
output(input{"x", {1}}, "y")
