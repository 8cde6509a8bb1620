// Binds a TcpStack under the IP layer: the Stack hands it protocol-6 datagrams
// and ICMP errors, and polls its timers.
#pragma once

#include "stack/iface/stack.hpp"
#include "stack/tcp/tcp_stack.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws::tcp {

class TcpTransport final : public TransportHandler {
 public:
  explicit TcpTransport(TcpStack& tcp) : tcp_(tcp) {}
  void input(IpAddr src, IpAddr dst, const PacketView& segment, bool verified,
             Instant now) override {
    tcp_.input(src, dst, segment, verified, now);
  }
  bool icmp_error(uint8_t type, uint8_t code, uint16_t next_hop_mtu,
                  std::span<const uint8_t> quoted, Instant now) override {
    if (!quoted.empty() && quoted[0] >> 4 == 6) {
      return icmp6_error(type, code, next_hop_mtu, quoted, now);
    }
    // `quoted` starts at the IPv4 header of a datagram we sent: its source is
    // us, its destination the peer, and the TCP header follows its IHL.
    auto ip = wire::Ipv4View::parse(quoted);
    if (!ip || ip->header_len() < wire::Ipv4View::kMinHeaderLen ||
        quoted.size() < ip->header_len() + 8) {
      return false;  // RFC 792: at least 8 bytes of the original payload are quoted
    }
    IcmpError e = IcmpError::kOtherUnreachable;
    if (type == wire::kIcmpDestUnreachable && code == wire::kIcmpCodeFragNeeded) {
      e = IcmpError::kFragNeeded;
    } else if (type == wire::kIcmpDestUnreachable && (code == wire::kIcmpCodePortUnreachable ||
                                                      code == wire::kIcmpCodeProtoUnreachable)) {
      e = IcmpError::kPortUnreachable;
    }
    return tcp_.icmp_error(ip->src(), ip->dst(), quoted.subspan(ip->header_len()), e, next_hop_mtu,
                           now, ip->total_len());
  }
  Instant poll(Instant now) override { return tcp_.poll(now); }
  void begin_rx_burst() override { tcp_.begin_rx_burst(); }
  void end_rx_burst(Instant now) override { tcp_.end_rx_burst(now); }

 private:
  // An ICMPv6 error (RFC 4443) quoting an IPv6 packet we sent, the TCP header right after
  // its fixed header (the stack's IPv6 output adds no extension headers).
  bool icmp6_error(uint8_t type, uint8_t code, uint16_t mtu, std::span<const uint8_t> quoted,
                   Instant now) {
    auto ip = wire::Ipv6View::parse(quoted);
    if (!ip || quoted.size() < wire::Ipv6View::kHeaderLen + 8) return false;
    IcmpError e = IcmpError::kOtherUnreachable;
    if (type == wire::kIcmpv6PacketTooBig) {
      e = IcmpError::kFragNeeded;
    } else if (type == wire::kIcmpv6DestUnreachable && code == wire::kIcmpv6CodePortUnreachable) {
      e = IcmpError::kPortUnreachable;
    } else if (type != wire::kIcmpv6DestUnreachable && type != wire::kIcmpv6TimeExceeded) {
      return true;  // Parameter Problem: nothing for TCP to act on
    }
    // A mapped or other ::/64 address in the quote would read as IPv4 (IpAddr): none of
    // our connections has one.
    if (IpAddr::reserved_v6(ip->src()) || IpAddr::reserved_v6(ip->dst())) return false;
    return tcp_.icmp_error(IpAddr(ip->src()), IpAddr(ip->dst()),
                           quoted.subspan(wire::Ipv6View::kHeaderLen), e, mtu, now,
                           static_cast<uint16_t>(std::min<size_t>(
                               wire::Ipv6View::kHeaderLen + ip->payload_len(), 65535)));
  }

  TcpStack& tcp_;
};

}  // namespace ws::tcp
