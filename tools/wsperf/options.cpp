#include "tools/wsperf/options.hpp"

#include <arpa/inet.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace wsperf {

const char* role_name(Role role) {
  switch (role) {
    case Role::kEcho:
      return "echo";
    case Role::kSink:
      return "sink";
    case Role::kSource:
      return "source";
    case Role::kPing:
      return "ping";
  }
  return "?";
}

const char* usage() {
  return "usage: wsperf ROLE [options]   (the kernel-sockets twin of wirespeed's services)\n"
         "  wsperf echo|sink --listen IP:PORT [--protocol tcp|udp] [--framing length32|none]\n"
         "                   [--verify] [--duration S] [--echo-buffer BYTES]\n"
         "  wsperf source --target IP:PORT --message-size N [--connections C]\n"
         "                [--duration S | --count N] [--rate MSG_PER_S] [--send-messages N]\n"
         "  wsperf ping   --target IP:PORT --message-size N [--count N | --duration S]\n"
         "                [--connections C] [--reconnect] [--verify] [--timeout S]\n"
         "common: --protocol tcp|udp (default tcp; over UDP a message is one datagram)\n"
         "        --framing length32|none (default length32; TCP only)\n"
         "        --report FILE (JSON summary)  --cpu N (pin to core)  --quiet (no progress)\n"
         "        --max-message BYTES (largest accepted length32 message, default 1 GiB)\n"
         "        --idle-timeout S (clients: give up after S seconds without progress, 10)\n"
         "Clients run for --duration (default 10 s) or --count messages. Servers run until\n"
         "SIGINT/SIGTERM or --duration; both print a summary line and exit 0.\n"
         "Listening on port 0 picks a free port; the line 'listening on IP:PORT' names it.\n";
}

namespace {

bool parse_u64(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const std::string tmp(s);
  const unsigned long long v = std::strtoull(tmp.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || tmp[0] == '-') return false;
  out = v;
  return true;
}

bool parse_double(std::string_view s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const std::string tmp(s);
  const double v = std::strtod(tmp.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v) || v < 0) return false;
  out = v;
  return true;
}

bool parse_endpoint(std::string_view s, sockaddr_in& out) {
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return false;
  const std::string host(s.substr(0, colon));
  uint64_t port = 0;
  if (!parse_u64(s.substr(colon + 1), port) || port > 65535) return false;
  std::memset(&out, 0, sizeof out);
  out.sin_family = AF_INET;
  out.sin_port = htons(static_cast<uint16_t>(port));
  return inet_pton(AF_INET, host.c_str(), &out.sin_addr) == 1;
}

bool parse_role(std::string_view role, Options& opt, std::string& error) {
  if (role == "echo") {
    opt.role = Role::kEcho;
  } else if (role == "sink") {
    opt.role = Role::kSink;
  } else if (role == "source") {
    opt.role = Role::kSource;
  } else if (role == "ping") {
    opt.role = Role::kPing;
  } else {
    error = "unknown role '" + std::string(role) + "' (echo, sink, source or ping)";
    return false;
  }
  return true;
}

// Flags without a value; false when `flag` is not one.
bool parse_switch(std::string_view flag, Options& opt) {
  if (flag == "--verify") {
    opt.verify = true;
  } else if (flag == "--reconnect") {
    opt.reconnect = true;
  } else if (flag == "--quiet" || flag == "-q") {
    opt.quiet = true;
  } else {
    return false;
  }
  return true;
}

enum class Parsed { kOk, kBadValue, kUnknown };

// One flag with its value. --listen/--target are checked against the role by the caller.
Parsed parse_value(std::string_view flag, std::string_view v, Options& opt, bool& have_addr,
                   bool& have_size) {
  bool ok = true;
  uint64_t u = 0;
  if (flag == "--listen" || flag == "--target") {
    ok = parse_endpoint(v, opt.addr);
    opt.addr_text = v;
    have_addr = ok;
  } else if (flag == "--protocol") {
    ok = v == "tcp" || v == "udp";
    opt.udp = v == "udp";
  } else if (flag == "--framing") {
    ok = v == "length32" || v == "none";
    opt.framing = v == "none" ? ws::Framing::kNone : ws::Framing::kLength32;
  } else if (flag == "--message-size") {
    ok = parse_u64(v, opt.message_size) && opt.message_size <= ws::kMaxWireMessageBytes;
    have_size = ok;
  } else if (flag == "--connections") {
    ok = parse_u64(v, u) && u >= 1 && u <= 100000;
    opt.connections = static_cast<unsigned>(u);
  } else if (flag == "--duration") {
    ok = parse_double(v, opt.duration_s) && opt.duration_s > 0;
  } else if (flag == "--count") {
    ok = parse_u64(v, opt.count) && opt.count > 0;
  } else if (flag == "--send-messages") {
    ok = parse_u64(v, opt.send_messages) && opt.send_messages >= 1;
  } else if (flag == "--rate") {
    ok = parse_double(v, opt.rate) && opt.rate > 0;
  } else if (flag == "--report") {
    opt.report = v;
  } else if (flag == "--cpu") {
    ok = parse_u64(v, u) && u < 4096;
    opt.cpu = static_cast<int>(u);
  } else if (flag == "--max-message") {
    ok = parse_u64(v, opt.max_message) && opt.max_message <= ws::kMaxWireMessageBytes;
  } else if (flag == "--echo-buffer") {
    ok = parse_u64(v, opt.echo_buffer) && opt.echo_buffer >= 4096 &&
         opt.echo_buffer <= (uint64_t{1} << 30);
  } else if (flag == "--timeout") {
    ok = parse_double(v, opt.timeout_s) && opt.timeout_s > 0;
  } else if (flag == "--idle-timeout") {
    ok = parse_double(v, opt.idle_timeout_s) && opt.idle_timeout_s > 0;
  } else {
    return Parsed::kUnknown;
  }
  return ok ? Parsed::kOk : Parsed::kBadValue;
}

// What every role needs once all flags are read; fills in the default duration.
bool check_required(Options& opt, bool have_addr, bool have_size, std::string& error) {
  if (!have_addr) {
    error = opt.client() ? "--target IP:PORT is required" : "--listen IP:PORT is required";
    return false;
  }
  if (!opt.client()) return true;
  if (!have_size) {
    error = "--message-size is required";
    return false;
  }
  // Bounded: a client without a limit runs for 10 s.
  if (opt.duration_s == 0 && opt.count == 0) opt.duration_s = 10;
  if (opt.udp && opt.message_size > 65507) {
    error = "--message-size: a UDP message is one datagram, at most 65507 bytes over IPv4";
    return false;
  }
  if (!opt.udp && opt.framing == ws::Framing::kNone && opt.message_size == 0) {
    error = "--message-size 0 needs framing length32 (with framing none it sends nothing)";
    return false;
  }
  return true;
}

}  // namespace

bool parse_options(int argc, char** argv, Options& opt, std::string& error, bool& help) {
  help = false;
  if (argc < 2) {
    error = "missing role (echo, sink, source or ping)";
    return false;
  }
  const std::string_view role = argv[1];
  if (role == "--help" || role == "-h") {
    help = true;
    return true;
  }
  if (!parse_role(role, opt, error)) return false;
  bool have_addr = false;
  bool have_size = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      help = true;
      return true;
    }
    if (parse_switch(flag, opt)) continue;
    if (i + 1 >= argc) {
      error = std::string(flag) + ": missing value";
      return false;
    }
    if ((flag == "--listen" && opt.client()) || (flag == "--target" && !opt.client())) {
      error = std::string(flag) + " is not an option of " + role_name(opt.role);
      return false;
    }
    const std::string_view v = argv[++i];
    const Parsed r = parse_value(flag, v, opt, have_addr, have_size);
    if (r == Parsed::kUnknown) {
      error = "unknown option " + std::string(flag);
      return false;
    }
    if (r == Parsed::kBadValue) {
      error = std::string(flag) + ": bad value '" + std::string(v) + "'";
      return false;
    }
  }
  return check_required(opt, have_addr, have_size, error);
}

}  // namespace wsperf
