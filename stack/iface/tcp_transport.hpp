// Binds a TcpStack under the IP layer: the Stack hands it protocol-6 datagrams
// and ICMP errors, and polls its timers.
#pragma once

#include "stack/iface/stack.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"

namespace ws::tcp {

class TcpTransport final : public TransportHandler {
 public:
  explicit TcpTransport(TcpStack& tcp) : tcp_(tcp) {}
  void input(IpAddr src, IpAddr dst, const PacketView& segment, bool verified,
             Instant now) override {
    tcp_.input(src, dst, segment, verified, now);
  }
  void icmp_error(uint8_t type, uint8_t code, uint16_t next_hop_mtu,
                  std::span<const uint8_t> quoted, Instant now) override {
    // `quoted` starts at the IPv4 header of a datagram we sent: its source is
    // us, its destination the peer, and the TCP header follows its IHL.
    auto ip = wire::Ipv4View::parse(quoted);
    if (!ip || ip->header_len() < wire::Ipv4View::kMinHeaderLen ||
        quoted.size() < ip->header_len() + 8) {
      return;  // RFC 792: at least 8 bytes of the original payload are quoted
    }
    IcmpError e = IcmpError::kOtherUnreachable;
    if (type == wire::kIcmpDestUnreachable && code == wire::kIcmpCodeFragNeeded) {
      e = IcmpError::kFragNeeded;
    } else if (type == wire::kIcmpDestUnreachable && (code == wire::kIcmpCodePortUnreachable ||
                                                      code == wire::kIcmpCodeProtoUnreachable)) {
      e = IcmpError::kPortUnreachable;
    }
    tcp_.icmp_error(ip->src(), ip->dst(), quoted.subspan(ip->header_len()), e, next_hop_mtu, now,
                    ip->total_len());
  }
  Instant poll(Instant now) override { return tcp_.poll(now); }

 private:
  TcpStack& tcp_;
};

}  // namespace ws::tcp
