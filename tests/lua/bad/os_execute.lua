-- Scripts cannot run programs: there is no os library.
-- expect: os_execute.lua:4: os.execute: scripts run in kiln's sandbox, which has no 'os' library
local x = input{"x", {1, 4}}
os.execute("touch /tmp/kiln-sandbox-escaped")
output(x, "y")
