// The four roles over TCP and UDP. Each returns the process exit status:
// 0 success (also after SIGINT/SIGTERM), 1 a setup or network failure,
// 3 when --verify found bytes that were not the pattern or the peer broke the
// framing.
#pragma once

#include "tools/wsperf/options.hpp"

namespace wsperf {

int run_tcp_server(const Options& opt);  // echo, sink
int run_tcp_source(const Options& opt);
int run_tcp_ping(const Options& opt);
int run_udp_server(const Options& opt);  // echo, sink
int run_udp_source(const Options& opt);
int run_udp_ping(const Options& opt);

}  // namespace wsperf
