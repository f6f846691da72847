-- expect: weights: already bound to
weights("tiny_llama.gguf")
weights("q6k.gguf")
output(input{"x", {1}}, "y")
