// Internal to the stack: one interface's state on one core.
#pragma once

#include <algorithm>

#include "stack/iface/ipv6_iface.hpp"
#include "stack/iface/stack.hpp"
#include "stack/wire/ethernet.hpp"

namespace ws {

struct Stack::Interface final : public ArpActions {
  Interface(Stack& s, uint16_t idx, const InterfaceConfig& c, PacketIo& io_,
            const ArpConfig& arp_cfg)
      : stack(s), index(idx), cfg(c), io(io_), arp(arp_cfg), offloads(io_.tx_offloads()) {
    if (cfg.software_checksums) offloads = TxOffloads{};
    if (cfg.runs_ipv6()) v6 = std::make_unique<Ipv6Iface>(*this, s.cfg_.ndp);
  }

  // ArpActions
  void send_request(Ipv4Addr target) override;
  void send_resolved(TxBuf& frame, const MacAddr& dst) override;
  void drop_pending(TxBuf& frame) override;

  Stack& stack;
  uint16_t index;
  InterfaceConfig cfg;
  PacketIo& io;
  ArpCache arp;
  TxOffloads offloads;
  InterfaceCounters counters;
  std::unique_ptr<Ipv6Iface> v6;  // null when the interface does not run IPv6
};

// Inline: it is on the path of every segment sent, where a call costs IPv4 TCP about 20
// instructions per segment (callgrind, rx_path_bench).
inline bool Stack::alloc_l4_frame(Interface& ifc, uint32_t l3_len, int32_t header_len,
                                  uint32_t l4_len, L4Frame& out) {
  constexpr uint32_t kL2 = wire::EthernetView::kHeaderLen;
  const uint32_t len = kL2 + l3_len + l4_len;
  if (l3_len + l4_len > ifc.cfg.mtu || len > ifc.io.max_frame_len()) {
    drops_.add(DropReason::kFrameTooLong);
    return false;
  }
  const uint32_t alloc_len = std::max<uint32_t>(len, 60);
  const bool ok = header_len < 0
                      ? ifc.io.alloc_tx(alloc_len, out.buf)
                      : ifc.io.alloc_tx_gather(
                            alloc_len, kL2 + l3_len + static_cast<uint32_t>(header_len), out.buf);
  if (!ok) {
    drops_.add(DropReason::kNoMbuf);
    return false;
  }
  out.buf.len = len;
  out.buf.flags = 0;
  lay_out_l4(out, l4_len, kL2 + l3_len);
  out.iface = ifc.index;
  out.dont_fragment = true;
  return true;
}

// Inline: every frame sent ends here.
inline void Stack::transmit_counted(Interface& ifc, TxBuf& buf) {
  ++counters_.tx_frames;
  counters_.tx_bytes += buf.len;
  ifc.io.transmit(buf);
}

inline void Stack::transmit_resolved(Interface& ifc, TxBuf& buf, const MacAddr& dst) {
  dst.to_bytes(buf.data + wire::EthernetView::kDstOff);
  transmit_counted(ifc, buf);
}

inline void Stack::transmit_on_path(Interface& ifc, TxBuf& b, uint16_t l3_len,
                                    uint64_t& family_out) {
  b.l2_len = wire::EthernetView::kHeaderLen;
  b.l3_len = l3_len;
  pad_to_min_frame(b);
  ++family_out;
  ifc.io.seal(b);
  transmit_counted(ifc, b);
}

// Inline, as are the ARP lookup and transmit_resolved: every IPv4 frame sent goes through
// them (commit); only a next hop not resolved yet goes out of line.
inline void Stack::finish_frame(const Interface& ifc, TxBuf& b) {
  pad_to_min_frame(b);
  wire::emit_ethernet(b.data, MacAddr{}, ifc.cfg.mac, wire::kEtherTypeIpv4);
  ++counters_.ipv4_out;
}

inline void Stack::send_to_hop(Interface& ifc, TxBuf& b, Ipv4Addr hop, bool broadcast,
                               Instant now) {
  ifc.io.seal(b);  // the frame may wait for ARP: out of any staging area first
  if (broadcast) {
    transmit_resolved(ifc, b, MacAddr::broadcast());
    return;
  }
  if (auto mac = ifc.arp.lookup_for_send(hop, now, ifc)) {
    transmit_resolved(ifc, b, *mac);
    return;
  }
  hold_for_arp(ifc, b, hop, now);
}

// Directly connected subnets first (RFC 1122 3.3.1.1), then the first gateway. Defined here,
// inline, for every frame sent and for TCP's per-segment questions (the MTU, the source
// address, the TSO limits): called out of line, its optional came back through the stack
// as narrow stores read back as one wide load, a store-forwarding stall.
inline std::optional<Stack::Route> Stack::route(Ipv4Addr dst) const {
  for (const auto& ifc : ifaces_) {
    const auto& a = ifc->cfg.address;
    if (dst.is_broadcast() || (a.prefix_len < 31 && dst == a.directed_broadcast())) {
      return Route{ifc->index, dst, true};
    }
    if (a.contains(dst)) return Route{ifc->index, dst, false};
  }
  for (const auto& ifc : ifaces_) {
    if (ifc->cfg.gateway) return Route{ifc->index, *ifc->cfg.gateway, false};
  }
  return std::nullopt;
}

}  // namespace ws
