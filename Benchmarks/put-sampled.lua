-- wrk script: PUT a body of SIZE bytes (default 8 KiB, env) to one of 1000
-- keys: above the 4 KiB threshold, so each request pays for the sampling
-- decision. CONTENT=random (default) or text.
local size = tonumber(os.getenv("SIZE") or "8192")
local parts = {}
math.randomseed(7)
for i = 1, size do
  if os.getenv("CONTENT") == "text" then
    parts[i] = string.char(97 + (i * 7 + math.floor(i / 64)) % 13)
  else
    parts[i] = string.char(math.random(0, 255))
  end
end
local counter = 0
wrk.method = "PUT"
wrk.body = table.concat(parts)
wrk.headers["Content-Type"] = "application/octet-stream"

request = function()
  counter = counter + 1
  return wrk.format(nil, "/store/bench/sampled-" .. (counter % 1000))
end
