// Multicast Listener Discovery v2 for a host (RFC 3810): the interface reports the
// solicited-node groups of its addresses at start (6.1, Robustness Variable times, one
// second apart) and again when a router queries, so a snooping switch forwards neighbour
// solicitations for them. The all-nodes group is never reported (RFC 3810 6).
#include <algorithm>
#include <cstring>
#include <vector>

#include "stack/iface/interface.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmpv6.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws {

namespace {

constexpr uint32_t kMldRobustness = 2;                           // RFC 3810 9.1
constexpr Duration kUnsolicitedInterval = Duration::seconds(1);  // RFC 3810 9.11
constexpr uint8_t kMldHopLimit = 1;                              // RFC 3810 5

Ipv6Addr all_mldv2_routers() { return *Ipv6Addr::parse("ff02::16"); }

}  // namespace

void Stack::send_mld_report(Interface& ifc) {
  const Ipv6Iface& v6 = *ifc.v6;
  std::vector<Ipv6Addr> groups;
  for (const auto& a : v6.addrs) {
    // RFC 4862 5.4.2: a tentative address's group is joined before DAD probes it.
    if (a.state == Ipv6AddrState::kDuplicate) continue;
    const Ipv6Addr g = a.cidr.addr.solicited_node();
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  constexpr uint32_t kHdrs = wire::EthernetView::kHeaderLen + wire::Ipv6View::kHeaderLen +
                             static_cast<uint32_t>(wire::kRouterAlertHopByHopLen);
  const size_t room =
      (ifc.v6->mtu - (kHdrs - wire::EthernetView::kHeaderLen) - wire::kMldv2ReportHeaderLen) /
      wire::kMldv2RecordLen;
  groups.resize(std::min(groups.size(), room));
  if (groups.empty()) return;
  // RFC 3810 5.2.13 / RFC 3590: from the link-local address once it may be used, else ::.
  const Ipv6Addr src =
      v6.addrs[0].state == Ipv6AddrState::kPreferred ? v6.addrs[0].cidr.addr : Ipv6Addr{};
  const Ipv6Addr dst = all_mldv2_routers();
  const auto len =
      static_cast<uint32_t>(wire::kMldv2ReportHeaderLen + groups.size() * wire::kMldv2RecordLen);
  TxBuf b;
  if (!ifc.io.alloc_tx(kHdrs + len, b)) {
    drops_.add(DropReason::kNoMbuf);
    return;
  }
  wire::emit_ethernet(b.data, MacAddr{}, ifc.cfg.mac, wire::kEtherTypeIpv6);
  wire::emit_ipv6(b.data + wire::EthernetView::kHeaderLen,
                  wire::Ipv6Repr{src, dst, wire::kIpv6HopByHop, kMldHopLimit, 0, 0,
                                 static_cast<uint16_t>(wire::kRouterAlertHopByHopLen + len)});
  wire::emit_router_alert_hop_by_hop(
      b.data + wire::EthernetView::kHeaderLen + wire::Ipv6View::kHeaderLen, wire::kIpProtoIcmpv6);
  uint8_t* msg = b.data + kHdrs;
  wire::emit_mldv2_report(msg, groups);
  wire::fill_icmpv6_checksum(std::span<uint8_t>(msg, len), src, dst);
  b.len = kHdrs + len;
  ++counters_.ipv6_out;
  ++counters_.mld_reports_out;
  transmit_resolved(ifc, b, dst.multicast_mac());
}

Instant Stack::poll_mld(Interface& ifc, Instant now) {
  Ipv6Iface& v6 = *ifc.v6;
  if (v6.mld_left == 0) return Instant::never();
  if (now >= v6.mld_at) {
    send_mld_report(ifc);
    --v6.mld_left;
    v6.mld_at = now + kUnsolicitedInterval;
  }
  return v6.mld_left == 0 ? Instant::never() : v6.mld_at;
}

void Stack::start_mld(Interface& ifc, Instant now) {
  ifc.v6->mld_left = kMldRobustness;
  ifc.v6->mld_at = now;
}

void Stack::mld_query_input(Interface& ifc, const wire::Ipv6View& ip, Instant now) {
  // RFC 3810 5.1.14: a query from a source that is not link-local is discarded. Answered
  // with one report of every group at once (the random delay of 6.2 is not applied).
  if (!ip.src().is_link_local() || ip.hop_limit() != kMldHopLimit) {
    drops_.add(DropReason::kMldBadQuery);
    return;
  }
  ++counters_.mld_queries_in;
  ifc.v6->mld_left = std::max<uint32_t>(ifc.v6->mld_left, 1);
  ifc.v6->mld_at = now;
  v6_deadline_ = Instant::from_ns(0);
}

}  // namespace ws
