// Binds a TcpStack under the IP layer: the Stack hands it protocol-6 datagrams
// and ICMP errors, and polls its timers.
#pragma once

#include "stack/iface/stack.hpp"
#include "stack/tcp/tcp_stack.hpp"

namespace ws::tcp {

class TcpTransport final : public TransportHandler {
 public:
  explicit TcpTransport(TcpStack& tcp) : tcp_(tcp) {}
  void input(Ipv4Addr src, Ipv4Addr dst, std::span<const uint8_t> segment, bool verified,
             Instant now) override {
    tcp_.input(src, dst, segment, verified, now);
  }
  void icmp_error(uint8_t type, uint8_t code, uint16_t next_hop_mtu,
                  std::span<const uint8_t> quoted, Instant now) override {
    // Path-MTU handling (RFC 1191 / RFC 5927 validation) belongs to the jumbo-frame
    // work; until then ICMP errors are counted by the IP layer and not acted on.
    (void)type, (void)code, (void)next_hop_mtu, (void)quoted, (void)now;
  }
  Instant poll(Instant now) override { return tcp_.poll(now); }

 private:
  TcpStack& tcp_;
};

}  // namespace ws::tcp
