-- Each step of this loop spends a millisecond in C: the step budget would
-- take hours, the time budget (1 s at 10^8 steps) stops it.
-- args: --lua-steps=100000000
-- expect: time_budget.lua:6: the script ran past its time budget of 1 s
local x = input{"x", {1, 4}}
while true do local s = string.rep("a", 1000000):upper() end
output(x, "y")
