// Internal to the stack: one interface's state on one core.
#pragma once

#include "stack/iface/ipv6_iface.hpp"
#include "stack/iface/stack.hpp"

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

}  // namespace ws
