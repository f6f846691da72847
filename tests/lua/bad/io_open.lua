-- Scripts cannot touch files: there is no io library.
-- expect: io_open.lua:5: io.open: scripts run in kiln's sandbox, which has no 'io' library
local x = input{"x", {1, 4}}
local secret = "/etc/passwd"
local f = io.open(secret)
output(x, "y")
