#include "stack/iface/stack.hpp"

#include <algorithm>

#include "stack/core/bytes.hpp"
#include "stack/iface/interface.hpp"
#include "stack/wire/arp.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmp.hpp"

namespace ws {

Stack::Stack(const StackConfig& cfg)
    : cfg_(cfg),
      udp_(*this, drops_, counters_.udp_out),
      icmp_errors_(cfg.icmp_errors_per_second, cfg.icmp_error_burst),
      icmp6_errors_(cfg.icmp_errors_per_second, cfg.icmp_error_burst),
      reasm_(cfg.reassembly),
      rx_linear_(65535) {}

Stack::~Stack() { release_buffers(); }

void Stack::release_buffers() {
  // Frames still waiting for ARP belong to the interfaces' buffer pools: give them
  // back, or a stack torn down mid-resolution leaks them.
  for (auto& ifc : ifaces_) {
    ifc->arp.clear(*ifc);
    if (ifc->v6) ifc->v6->nd.clear(*ifc->v6);
  }
  release_held_esp();
}

uint16_t Stack::add_interface(const InterfaceConfig& cfg, PacketIo& io) {
  auto idx = static_cast<uint16_t>(ifaces_.size());
  ifaces_.push_back(std::make_unique<Interface>(*this, idx, cfg, io, cfg_.arp));
  Interface& ifc = *ifaces_.back();
  // Configured neighbours go into empty tables first: the configuration allows far fewer
  // than a table holds, so every one finds a slot.
  for (const StaticNeighbor& n : cfg.static_neighbors) {
    if (n.ip.is_v4()) {
      ifc.arp.add_static(n.ip.v4(), n.mac, ifc);
    } else if (ifc.v6) {
      ifc.v6->nd.add_static(n.ip.v6(), n.mac, *ifc.v6);
    }
  }
  paths_.clear();  // a new interface may change routes
  paths6_.clear();
  return idx;
}

const InterfaceConfig& Stack::interface_config(uint16_t i) const { return ifaces_.at(i)->cfg; }

const InterfaceCounters& Stack::interface_counters(uint16_t i) const {
  return ifaces_.at(i)->counters;
}

size_t Stack::arp_entries() const {
  size_t n = 0;
  for (const auto& i : ifaces_) n += i->arp.size();
  return n;
}

void Stack::start(Instant now) {
  for (auto& ifc : ifaces_) {
    // Gratuitous ARP: a request for our own address (RFC 5227 section 3), so
    // neighbours refresh any stale mapping.
    send_arp(*ifc, static_cast<uint16_t>(wire::ArpOp::kRequest), MacAddr::broadcast(), MacAddr{},
             ifc->cfg.address.addr);
    ++counters_.arp_gratuitous_out;
    if (ifc->v6) start_ipv6(*ifc, now);
  }
}

std::span<const uint8_t> Stack::linearize(const PacketView& v) {
  if (v.contiguous()) return v.head();
  size_t n = std::min(v.size(), rx_linear_.size());
  v.copy_out(0, std::span<uint8_t>(rx_linear_.data(), n));
  ++counters_.rx_linearized;
  return {rx_linear_.data(), n};
}

void Stack::receive(const PacketView& frame, const RxMeta& meta, Instant now) {
  ++counters_.rx_frames;
  counters_.rx_bytes += frame.size();
  if (meta.port >= ifaces_.size()) {
    drops_.add(DropReason::kEthNotForUs);
    return;
  }
  Interface& ifc = *ifaces_[meta.port];
  // The header, pulled up only if the first segment is shorter than it; with
  // an 802.1Q tag, 4 bytes more (EthernetView::parse rejects what is too short).
  uint8_t hdr[wire::EthernetView::kHeaderLen + wire::EthernetView::kVlanTagLen];
  auto h = frame.pullup(std::min(frame.size(), wire::EthernetView::kHeaderLen), hdr,
                        counters_.rx_header_pullups);
  if (h.size() == wire::EthernetView::kHeaderLen &&
      load_be16(h.data() + wire::EthernetView::kTypeOff) == wire::kEtherTypeVlan) {
    h = frame.pullup(std::min(frame.size(), sizeof hdr), hdr, counters_.rx_header_pullups);
  }
  auto eth = wire::EthernetView::parse(h);
  if (!eth) {
    drops_.add(DropReason::kEthTruncated);
    return;
  }
  MacAddr dst = eth->dst();
  if (dst != ifc.cfg.mac && !dst.is_broadcast() && !ipv6_wants(ifc, dst)) {
    drops_.add(DropReason::kEthNotForUs);
    return;
  }
  if (eth->has_vlan()) {
    // No VLAN sub-interfaces are configured, so tagged frames are not ours.
    drops_.add(DropReason::kVlanUnsupported);
    return;
  }
  switch (eth->ethertype()) {
    case wire::kEtherTypeIpv4: {
      // TCP verifies its checksum behind the transport interface, which knows no
      // interface: the drop counters' difference attributes the failures to this one.
      const uint64_t bad_before = l4_checksum_drops();
      ipv4_input(ifc, frame.tail(eth->header_len()), meta, dst.is_broadcast(), now);
      ifc.counters.l4_checksum_errors += l4_checksum_drops() - bad_before;
      return;
    }
    case wire::kEtherTypeIpv6:
      ipv6_input(ifc, frame.tail(eth->header_len()), now);
      return;
    case wire::kEtherTypeArp: {
      auto body = frame.tail(eth->header_len());
      uint8_t arp[wire::ArpView::kLen];
      arp_input(ifc,
                body.pullup(std::min(body.size(), sizeof arp), arp, counters_.rx_header_pullups),
                now);
      return;
    }
    default:
      drops_.add(DropReason::kEthUnknownType);
      return;
  }
}

void Stack::send_arp(Interface& ifc, uint16_t op, const MacAddr& eth_dst, const MacAddr& tha,
                     Ipv4Addr tpa) {
  constexpr uint32_t kLen = wire::EthernetView::kHeaderLen + wire::ArpView::kLen;
  TxBuf b;
  if (!ifc.io.alloc_tx(kMinEthernetFrame, b)) {
    drops_.add(DropReason::kNoMbuf);
    return;
  }
  wire::emit_ethernet(b.data, eth_dst, ifc.cfg.mac, wire::kEtherTypeArp);
  wire::ArpRepr r{static_cast<wire::ArpOp>(op), ifc.cfg.mac, ifc.cfg.address.addr, tha, tpa};
  wire::emit_arp(b.data + wire::EthernetView::kHeaderLen, r);
  b.len = kLen;
  pad_to_min_frame(b);
  ++counters_.tx_frames;
  counters_.tx_bytes += b.len;
  ifc.io.transmit(b);
}

void Stack::arp_input(Interface& ifc, std::span<const uint8_t> body, Instant now) {
  wire::ArpError err{};
  auto arp = wire::ArpView::parse(body, &err);
  if (!arp) {
    drops_.add(err == wire::ArpError::kTruncated ? DropReason::kArpTruncated
                                                 : DropReason::kArpBadFormat);
    return;
  }
  uint16_t op = arp->op();
  if (op != static_cast<uint16_t>(wire::ArpOp::kRequest) &&
      op != static_cast<uint16_t>(wire::ArpOp::kReply)) {
    drops_.add(DropReason::kArpBadFormat);
    return;
  }
  Ipv4Addr spa = arp->sender_ip();
  MacAddr sha = arp->sender_mac();
  if (sha.is_multicast() || spa.is_broadcast() || spa.is_multicast()) {
    drops_.add(DropReason::kArpBadFormat);
    return;
  }
  bool for_us = arp->target_ip() == ifc.cfg.address.addr;
  if (op == static_cast<uint16_t>(wire::ArpOp::kRequest)) {
    ++counters_.arp_requests_in;
  } else {
    ++counters_.arp_replies_in;
  }
  // RFC 826 "merge": refresh an existing entry for the sender whatever the target;
  // create one only when the packet is addressed to us. A sender in another
  // subnet is not a neighbour and is not learned.
  if (!spa.is_any() && ifc.cfg.address.contains(spa)) {
    ifc.arp.learn(spa, sha, for_us, now, ifc);
  }
  if (!for_us) {
    drops_.add(DropReason::kArpNotForUs);
    return;
  }
  if (op == static_cast<uint16_t>(wire::ArpOp::kRequest)) {
    send_arp(ifc, static_cast<uint16_t>(wire::ArpOp::kReply), sha, sha, spa);
    ++counters_.arp_replies_out;
  }
  arp_deadline_ = Instant::from_ns(0);  // re-evaluate timers
}

void Stack::Interface::send_request(Ipv4Addr target) {
  stack.send_arp(*this, static_cast<uint16_t>(wire::ArpOp::kRequest), MacAddr::broadcast(),
                 MacAddr{}, target);
  ++stack.counters_.arp_requests_out;
}

void Stack::Interface::send_resolved(TxBuf& frame, const MacAddr& dst) {
  stack.transmit_resolved(*this, frame, dst);
}

void Stack::Interface::drop_pending(TxBuf& frame) {
  stack.drops_.add(DropReason::kArpResolveFailed);
  io.release(frame);
}

Instant Stack::poll(Instant now) {
  flush(now);
  if (now >= arp_deadline_) {
    Instant next = Instant::never();
    for (auto& ifc : ifaces_) next = earliest(next, ifc->arp.poll(now, *ifc));
    arp_deadline_ = next;
    counters_.arp_entries = arp_entries();
  }
  Instant next = arp_deadline_;
  if (now >= reasm_.next_deadline()) {
    // RFC 792 / RFC 1122 3.3.2: a datagram that times out with its first fragment
    // present may be reported with time exceeded, code 1.
    reasm_.poll(now, drops_, [this, now](std::span<const uint8_t> first) {
      if (cfg_.icmp_reassembly_time_exceeded) {
        send_icmp_error(wire::kIcmpTimeExceeded, 1, 0, PacketView(first), now);
      }
    });
  }
  next = earliest(next, reasm_.next_deadline());
  next = earliest(next, poll_ipv6(now));
  if (tcp_ != nullptr) next = earliest(next, tcp_->poll(now));
  return next;
}

}  // namespace ws
