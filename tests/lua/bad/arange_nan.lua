-- A NaN bound: arange needs finite numbers.
-- expect: arange_nan.lua:5: arange: start 0, stop
-- expect: expected finite numbers
local x = input{"x", {1, 4}}
local a = arange(0, 0/0)
output(x, "y")
