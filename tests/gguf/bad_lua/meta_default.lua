-- args: --weights @DIR/tiny_llama.gguf
-- expect: meta_default.lua:7: the values are right
-- gguf_meta's values and defaults, checked in Lua; ends in an error so the
-- bad-case runner can see the script ran to its end
assert(gguf_meta("llama.block_count") == 2 and math.type(gguf_meta("llama.block_count")) == "integer")
assert(gguf_meta("llama.expert_count", 0) == 0 and gguf_meta("tokenizer.ggml.add_bos_token") == false)
error("the values are right")
