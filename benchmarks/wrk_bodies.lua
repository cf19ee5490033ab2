-- wrk script of benchmarks/bench_peer.py and benchmarks/bench_workers.py: POST a rotation of
-- GraphQL request bodies.
--
--   wrk -t1 -c16 -d5s --timeout 30s -s wrk_bodies.lua http://127.0.0.1:PORT/graphql -- BODIES
--
-- BODIES holds one JSON request body per line; each connection takes the next in turn. A
-- response that is not HTTP 200 or holds "errors" counts as bad. done() prints one JSON line
-- with the figures (socket_errors: connect, read, write and timeout errors together).

bad = 0 -- global: done() reads it from each thread with thread:get
local bodies = {}
local next_index = 0
local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    for line in io.lines(args[1]) do
        if #line > 0 then
            table.insert(bodies, line)
        end
    end
    assert(#bodies > 0, "no request bodies in " .. args[1])
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
            .. '"bad": %d, "socket_errors": %d}\n',
        summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
        latency:percentile(99), latency.max, total_bad, e.connect + e.read + e.write + e.timeout))
end
