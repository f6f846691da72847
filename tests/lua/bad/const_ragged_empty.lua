-- Ragged behind empty rows: {{{}}, {1}, {{}}} has no one shape.
-- expect: const_ragged_empty.lua:4: const: ragged nested table
local x = input{"x", {1, 4}}
local c = const({{{}}, {1}, {{}}})
output(x, "y")
