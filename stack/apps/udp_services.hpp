// UDP echo (RFC 862) and discard (RFC 863) services.
#pragma once

#include <cstdint>

#include "stack/apps/service.hpp"
#include "stack/udp/udp_table.hpp"

namespace ws {

class UdpEchoService final : public Service {
 public:
  UdpEchoService(std::string name, uint16_t port) : Service(std::move(name)), port_(port) {}
  bool start(Stack& stack, Instant now) override;
  void stop(Instant now) override;

 private:
  Stack* stack_ = nullptr;
  uint16_t port_;
};

class UdpSinkService final : public Service {
 public:
  UdpSinkService(std::string name, uint16_t port) : Service(std::move(name)), port_(port) {}
  bool start(Stack& stack, Instant now) override;
  void stop(Instant now) override;

 private:
  Stack* stack_ = nullptr;
  uint16_t port_;
};

}  // namespace ws
