-- An infinite step.
-- expect: arange_inf_step.lua:4: arange: start 0, stop 10, step inf; expected finite numbers
local x = input{"x", {1, 4}}
local a = arange(0, 10, 1/0)
output(x, "y")
