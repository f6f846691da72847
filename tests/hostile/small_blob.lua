-- small_blob.lua — a model whose weights go to a blob of about 4 KB, small
-- enough that flip_bits.c can hash it once per flipped bit.
local x = input{"x", {1, 8}}
local w = param{"w", {8, 64}, init = "uniform", bound = 1}
local v = param{"v", {64, 8}, init = "uniform", bound = 1}
output(x:matmul(w):relu():matmul(v), "y")
