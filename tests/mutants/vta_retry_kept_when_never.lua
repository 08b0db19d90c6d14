-- valkey_token_bucket_adapter.lua -- the client side of valkey_token_bucket.lua, written as a
-- limitlab adapter: it builds the key and the arguments, runs the script, and parses the string
-- fields the way a Go client would (strconv.ParseBool / ParseFloat / ParseInt).

local function int(x)
  return string.format('%d', x)
end

function request(req)
  local r = eval('main', {'valkeylimiter:{' .. req.subject .. '}'},
    {int(req.burst), int(req.limit), int(req.window_ms), int(req.now_ms), int(req.cost)})
  local allowed = r[1] == 'true'
  local tokens = tonumber(r[2])
  local retry = tonumber(r[3])
  local result = {
    allowed = allowed,
    remaining = math.floor(tokens),
    reset_ms = tonumber(r[4]),
  }
  if not allowed then
    result.retry_after_ms = retry
  end
  return result
end
