-- wrk script: PUT a 1 KiB body to one of 1000 keys per request ($PUTLUA of
-- Benchmarks/common.sh; run.sh, postgres.sh and cpu.sh use it).
local body = string.rep("0123456789abcdef", 64)
local counter = 0
wrk.method = "PUT"
wrk.body = body
wrk.headers["Content-Type"] = "application/octet-stream"

request = function()
  counter = counter + 1
  return wrk.format(nil, "/store/bench/put-" .. (counter % 1000))
end
