// Internal to the stack: one interface's IPv6 state on one core (its addresses with
// their duplicate address detection, RFC 4862, and its neighbour cache, RFC 4861).
#pragma once

#include <vector>

#include "stack/iface/neighbor_cache.hpp"
#include "stack/iface/router_list.hpp"
#include "stack/iface/stack.hpp"

namespace ws {

struct Stack::Ipv6Iface final : public NeighborActions {
  struct Address {
    Ipv6Cidr cidr;
    Ipv6AddrState state = Ipv6AddrState::kTentative;
    uint32_t dad_sent = 0;  // solicitations sent so far
    Instant dad_at;         // the next DAD step
  };

  Ipv6Iface(Interface& i, const NeighborConfig& cfg);

  // The address entry for `a`, in any state; nullptr when not ours.
  Address* find(const Ipv6Addr& a);
  const Address* find(const Ipv6Addr& a) const;
  bool on_link(const Ipv6Addr& a) const;

  // NeighborActions
  void send_solicit(const Ipv6Addr& target, const std::optional<MacAddr>& unicast) override;
  void send_resolved(TxBuf& frame, const MacAddr& dst) override;
  void drop_pending(TxBuf& frame) override;

  Interface& ifc;
  NeighborCache nd;
  std::vector<Address> addrs;  // the link-local address first
  DefaultRouters routers;      // learned from advertisements (accept_ra)
  uint32_t mtu;                // the link MTU: the port's, or an advertisement's lower one
  uint32_t rs_sent = 0;        // router solicitations sent since start
  Instant rs_at;               // the next one, while rs_sent < MAX_RTR_SOLICITATIONS
  bool ra_heard = false;       // an advertisement with a router lifetime ended solicitation
  uint32_t mld_left = 0;       // MLDv2 reports still to send (RFC 3810 6.1)
  Instant mld_at;              // the next one
};

}  // namespace ws
