-- wrk script for bench/proxy.ts: the same JSON-RPC tools/call POST as bench/load.ts, with the Authorization header
-- from the environment (WRK_AUTHORIZATION), and a count of answers that are not 200.
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{}}}'
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2025-11-25"
local authorization = os.getenv("WRK_AUTHORIZATION")
if authorization and authorization ~= "" then wrk.headers["authorization"] = authorization end
-- bench/virtual.ts: another message (a prefixed tool's call) and the MCP session it belongs to.
local body = os.getenv("WRK_BODY")
if body and body ~= "" then wrk.body = body end
local session = os.getenv("WRK_SESSION")
if session and session ~= "" then wrk.headers["mcp-session-id"] = session end
-- bench/eras.ts: headers of another era ("name=value;name=value"), e.g. a 2026-07-28 request's routing headers.
local extra = os.getenv("WRK_HEADERS")
if extra and extra ~= "" then
  for pair in string.gmatch(extra, "([^;]+)") do
    local name, value = string.match(pair, "^([^=]+)=(.*)$")
    if name then wrk.headers[name] = value end
  end
end

local failures = 0
function response(status, headers, body)
  if status ~= 200 then failures = failures + 1 end
end

function done(summary, latency, requests)
  io.write(string.format('WRK_JSON {"requests":%d,"seconds":%f,"p50_ms":%f,"p90_ms":%f,"p99_ms":%f,"errors":%d}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
