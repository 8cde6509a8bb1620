// TCP echo (RFC 862) and discard (RFC 863) servers on the stack's TCP API.
#pragma once

#include <cstdint>

#include "stack/apps/framing.hpp"
#include "stack/apps/service.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws {

class TcpEchoService final : public Service {
 public:
  TcpEchoService(std::string name, uint16_t port, tcp::TcpStack& tcp,
                 Framing framing = Framing::kLength32)
      : Service(std::move(name)), port_(port), tcp_(tcp), framing_(framing) {}
  bool start(Stack& stack, Instant now) override;
  void stop(Instant now) override;

 private:
  uint16_t port_;
  tcp::TcpStack& tcp_;
  Framing framing_;
  bool listening_ = false;
};

class TcpSinkService final : public Service {
 public:
  TcpSinkService(std::string name, uint16_t port, tcp::TcpStack& tcp,
                 Framing framing = Framing::kLength32)
      : Service(std::move(name)), port_(port), tcp_(tcp), framing_(framing) {}
  bool start(Stack& stack, Instant now) override;
  void stop(Instant now) override;

 private:
  uint16_t port_;
  tcp::TcpStack& tcp_;
  Framing framing_;
  bool listening_ = false;
};

}  // namespace ws
