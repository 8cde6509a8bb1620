// TCP echo (RFC 862) and discard (RFC 863) servers on the stack's TCP API.
#pragma once

#include <cstdint>

#include "stack/apps/framing.hpp"
#include "stack/apps/service.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws {

// What the TCP servers share: the listening port, the framing used to count
// messages, and unlisten on stop.
class TcpServerService : public Service {
 public:
  TcpServerService(std::string name, uint16_t port, tcp::TcpStack& tcp, Framing framing)
      : Service(std::move(name)), port_(port), tcp_(tcp), framing_(framing) {}
  void stop(Instant now) override;

 protected:
  bool listen(tcp::ListenCallbacks l);
  uint16_t port_;
  tcp::TcpStack& tcp_;
  Framing framing_;

 private:
  bool listening_ = false;
};

class TcpEchoService final : public TcpServerService {
 public:
  TcpEchoService(std::string name, uint16_t port, tcp::TcpStack& tcp,
                 Framing framing = Framing::kLength32)
      : TcpServerService(std::move(name), port, tcp, framing) {}
  bool start(Stack& stack, Instant now) override;
};

class TcpSinkService final : public TcpServerService {
 public:
  TcpSinkService(std::string name, uint16_t port, tcp::TcpStack& tcp,
                 Framing framing = Framing::kLength32)
      : TcpServerService(std::move(name), port, tcp, framing) {}
  bool start(Stack& stack, Instant now) override;
};

}  // namespace ws
