-- wrk script: at the end, the latency tail that --latency does not print (wrk keeps the
-- latencies in microseconds). Read by bench_services.py's parse_wrk.
done = function(summary, latency, requests)
  io.write(string.format("tail p99.9 %d us\n", latency:percentile(99.9)))
  io.write(string.format("tail max %d us\n", latency.max))
end
