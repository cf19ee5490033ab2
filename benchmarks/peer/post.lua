-- wrk script of benchmarks/bench_peer.py: POST a rotation of GraphQL request bodies.
--
--   wrk -t1 -c16 -d5s --timeout 30s -s post.lua http://127.0.0.1:PORT/graphql -- BODIES [START]
--
-- BODIES is a file of JSON request bodies, one per line; each connection's requests take the
-- next body in turn, starting at line START + 1. A response that is not HTTP 200 or whose body
-- holds "errors" is counted as bad. done() prints one JSON line with the figures.

bad = 0 -- global: done() reads it from each thread with thread:get
local bodies = {}
local next_index = 0
local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    local file = assert(io.open(args[1], "r"))
    for line in file:lines() do
        if #line > 0 then
            table.insert(bodies, line)
        end
    end
    file:close()
    assert(#bodies > 0, "no request bodies in " .. args[1])
    next_index = tonumber(args[2] or "0") % #bodies
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
end

function request()
    next_index = next_index % #bodies + 1
    return wrk.format(nil, nil, nil, bodies[next_index])
end

function response(status, headers, body)
    if status ~= 200 or string.find(body, '"errors"', 1, true) then
        bad = bad + 1
    end
end

function done(summary, latency, requests)
    local total_bad = 0
    for _, thread in ipairs(threads) do
        total_bad = total_bad + thread:get("bad")
    end
    local e = summary.errors
    io.write(string.format(
        '{"requests": %d, "duration_us": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, '
            .. '"mean_us": %.1f, "bad": %d, "connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}\n',
        summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
        latency:percentile(99), latency.max, latency.mean, total_bad,
        e.connect, e.read, e.write, e.status, e.timeout))
end
