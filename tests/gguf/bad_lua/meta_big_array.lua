-- args: --weights @DIR/tiny_llama.gguf
-- expect: gguf_meta: 'kiln.test.big' holds arrays of more than 4096 items in all (an array of 5000 i32 here)
local big = gguf_meta("kiln.test.big")
output(input{"x", {1}}, "y")
