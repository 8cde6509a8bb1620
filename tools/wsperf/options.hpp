// Command line of wsperf. Parsing never exits: it returns an error string so
// main() decides how to report it.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "stack/codec/framing.hpp"

namespace wsperf {

enum class Role { kEcho, kSink, kSource, kPing };

struct Options {
  Role role = Role::kSink;
  bool udp = false;
  ws::Framing framing = ws::Framing::kLength32;
  sockaddr_in addr{};  // --listen for servers, --target for clients
  std::string addr_text;
  uint64_t message_size = 64;
  unsigned connections = 1;
  double duration_s = 0;  // 0: none given
  uint64_t count = 0;     // 0: none given
  double rate = 0;        // messages per second over all connections; 0: full speed
  // TCP source: messages per send(); 0 fills the 256 KiB buffer (the default, as a
  // batching application does). 1 is an application that writes each message by itself.
  uint64_t send_messages = 0;
  bool verify = false;
  bool reconnect = false;
  bool quiet = false;
  std::string report;
  int cpu = -1;
  uint64_t max_message = ws::kDefaultMaxMessageBytes;
  uint64_t echo_buffer = 256 * 1024;  // per connection: unsent echo bytes before reading stops
  double timeout_s = 1.0;             // UDP ping: a reply later than this is lost
  double idle_timeout_s = 10.0;       // clients: no progress for this long is an error

  bool client() const { return role == Role::kSource || role == Role::kPing; }
};

const char* role_name(Role role);
// Fills `opt` from argv; on failure returns false and sets `error`. `help` is
// set when --help was asked for.
bool parse_options(int argc, char** argv, Options& opt, std::string& error, bool& help);
const char* usage();

}  // namespace wsperf
