-- wrk script: GET one of 1,000 JSON values (/store/bench/json/0.json ...
-- 999.json) at random per request, as an application reads many keys
-- ($JSONLUA of Benchmarks/common.sh; run.sh seeds the keys with
-- seed_json_keys and uses it).
local thread_id = 0
setup = function(thread)
  thread:set("id", thread_id)
  thread_id = thread_id + 1
end

init = function()
  math.randomseed(os.time() * 1000 + (id or 0))
end

request = function()
  return wrk.format("GET", "/store/bench/json/" .. math.random(0, 999) .. ".json")
end
