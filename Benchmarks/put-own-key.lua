-- wrk script: PUT 1 KiB, each wrk thread to a key of its own,
-- /store/bench/own-<tag><thread> (tag: the script's first argument). With
-- -tN -cN every connection writes one key: N writers that never wait for
-- each other's key (postgres.sh's "8 writers on 8 keys").
local body = string.rep("0123456789abcdef", 64)
local threads = 0
wrk.method = "PUT"
wrk.body = body
wrk.headers["Content-Type"] = "application/octet-stream"

function setup(thread)
  thread:set("n", threads)
  threads = threads + 1
end

function init(args)
  path = "/store/bench/own-" .. (args[1] or "") .. n
end

request = function()
  return wrk.format(nil, path)
end
