-- The standard libraries are shared with nn, so a script may not change
-- them: math.sqrt = f would change how nn initialises every param.
-- expect: library_assign.lua:4: math.sqrt: the standard libraries are read-only in kiln's sandbox
math.sqrt = function(x) return 1 end
local nn = require "nn"
output(nn.linear("fc", input{"x", {1, 4}}, 4), "y")
