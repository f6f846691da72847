-- --set names a parameter config{} does not have.
-- args: --set hiden=128
-- expect: unknown_set.lua:5: --set hiden=128: the script's config{} has no such parameter
local nn = require "nn"
local cfg = config{hidden = 64, batch = 1}
local x = input{"x", {cfg.batch, cfg.hidden}}
output(nn.relu(x), "y")
