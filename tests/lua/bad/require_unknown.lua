-- require finds kiln's bundled modules only.
-- expect: require_unknown.lua:3: require 'socket': no such module
local socket = require "socket"
local x = input{"x", {1, 4}}
output(x, "y")
