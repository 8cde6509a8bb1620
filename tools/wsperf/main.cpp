// wsperf: the kernel-sockets twin of wirespeed's echo, sink, source and ping
// services. Same framing (stack/codec/framing), same workloads, same summary
// line and JSON report, so the kernel and wirespeed can be measured with the
// same workload and a Linux host can talk to wirespeed services.
#include <sched.h>

#include <cstdio>
#include <string>

#include "tools/wsperf/options.hpp"
#include "tools/wsperf/roles.hpp"

int main(int argc, char** argv) {
  wsperf::Options opt;
  std::string error;
  bool help = false;
  if (!wsperf::parse_options(argc, argv, opt, error, help)) {
    std::fprintf(stderr, "wsperf: %s\n%s", error.c_str(), wsperf::usage());
    return 2;
  }
  if (help) {
    std::fputs(wsperf::usage(), stdout);
    return 0;
  }
  if (opt.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(opt.cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      std::fprintf(stderr, "wsperf: --cpu %d: cannot pin to that core\n", opt.cpu);
      return 1;
    }
  }
  using wsperf::Role;
  const bool server = opt.role == Role::kEcho || opt.role == Role::kSink;
  if (opt.udp) {
    if (server) return wsperf::run_udp_server(opt);
    return opt.role == Role::kSource ? wsperf::run_udp_source(opt) : wsperf::run_udp_ping(opt);
  }
  if (server) return wsperf::run_tcp_server(opt);
  return opt.role == Role::kSource ? wsperf::run_tcp_source(opt) : wsperf::run_tcp_ping(opt);
}
