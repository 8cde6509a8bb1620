// ports[].neighbors: link addresses given in the configuration instead of resolved by ARP
// or neighbour discovery (as `ip neigh add ... nud permanent`).
#include <algorithm>
#include <string>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

// Far fewer than a neighbour table holds (1,024 entries), so resolved neighbours keep room.
constexpr size_t kMaxStaticNeighbors = 64;

// Why `a` cannot be a neighbour of IPv4 port `p`, if it cannot.
std::optional<std::string> bad_neighbor4(ws::Ipv4Addr a, const PortConfig& p) {
  const ws::Ipv4Cidr& own = p.address;
  if (!own.contains(a)) {
    return "is outside the port's subnet " +
           ws::Ipv4Cidr{own.network(), own.prefix_len}.to_string();
  }
  if (a == own.addr) return "is the port's own address";
  if (own.prefix_len <= 30 && (a == own.network() || a == own.directed_broadcast()))
    return "is the network or broadcast address of the subnet";
  return std::nullopt;
}

// Why `a` cannot be an IPv6 neighbour of port `p`: neighbours are on-link (RFC 4861 2.1),
// so link-local or inside one of the port's prefixes.
std::optional<std::string> bad_neighbor6(const ws::Ipv6Addr& a, const PortConfig& p) {
  if (p.addresses6.empty() && !p.gateway6) return "is IPv6, and the port runs no IPv6";
  if (a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.is_v4_mapped())
    return "is not a unicast address";
  auto inside = [&](const ws::Ipv6Cidr& c) { return c.contains(a); };
  if (!a.is_link_local() && std::none_of(p.addresses6.begin(), p.addresses6.end(), inside))
    return "is neither link-local nor inside one of the port's IPv6 prefixes";
  auto own = [&](const ws::Ipv6Cidr& c) { return c.addr == a; };
  if (std::any_of(p.addresses6.begin(), p.addresses6.end(), own))
    return "is the port's own address";
  return std::nullopt;
}

// One item: { address: IP, mac: MAC }.
void parse_neighbor(Diagnostics& d, const Value& item, bool address_ok, PortConfig& p) {
  MapView m(d, item, {"address", "mac"});
  if (!m.is_map()) return;
  std::optional<ws::IpAddr> ip;
  if (m.require("address")) {
    Value v = *m.get("address");
    if (auto s = read_string(d, v)) {
      ip = ws::IpAddr::parse(*s);
      if (!ip) d.error(v.pos, v.path + ": '" + *s + "' is not an IPv4 or IPv6 address");
    }
    std::optional<std::string> why;
    if (ip && ip->is_v4() && address_ok) why = bad_neighbor4(ip->v4(), p);
    if (ip && ip->is_v6()) why = bad_neighbor6(ip->v6(), p);
    auto same = [&](const NeighborEntry& n) { return ip && n.address == *ip; };
    if (!why && std::any_of(p.neighbors.begin(), p.neighbors.end(), same)) why = "is listed twice";
    if (why) {
      d.error(v.pos, v.path + ": " + ip->to_string() + " " + *why);
      ip.reset();
    }
  }
  std::optional<ws::MacAddr> mac;
  if (m.require("mac")) {
    Value v = *m.get("mac");
    mac = read_mac(d, v);
    if (mac && (mac->is_zero() || mac->is_multicast())) {
      d.error(v.pos, v.path + ": " + mac->to_string() +
                         " is not a unicast MAC address (zero, multicast or broadcast)");
      mac.reset();
    }
  }
  if (ip && mac) p.neighbors.push_back({*ip, *mac});
}

}  // namespace

void parse_neighbors(Diagnostics& d, const Value& list, bool address_ok, PortConfig& p) {
  auto items = read_list(d, list);
  if (!items) return;
  if (items->size() > kMaxStaticNeighbors) {
    d.error(list.pos, list.path + ": " + std::to_string(items->size()) +
                          " neighbours; a port takes at most " +
                          std::to_string(kMaxStaticNeighbors));
    return;
  }
  for (const auto& item : *items) parse_neighbor(d, item, address_ok, p);
}

}  // namespace ws::config::detail
