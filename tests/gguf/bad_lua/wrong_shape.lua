-- args: --weights @DIR/tiny_llama.gguf
-- expect: param 'token_embd.weight': 
-- expect: tensor 'token_embd.weight' is f32[256,64] (Q8_0 in the file); expected f32[64,256]
local w = param{"token_embd.weight", {64, 256}}
output(input{"x", {1, 64}}:matmul(w), "y")
