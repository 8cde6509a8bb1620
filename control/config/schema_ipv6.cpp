// IPv6: the `ipv6` section, and the IPv6 parts of a port (`addresses`, `gateway6`).
#include <algorithm>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

// A configured IPv6 address must be a global or unique-local unicast one: the link-local
// address is formed by the port itself (RFC 4862 5.3).
std::optional<std::string> bad_host_address6(const ws::Ipv6Cidr& c) {
  const ws::Ipv6Addr& a = c.addr;
  if (c.prefix_len == 0) return "a /0 prefix covers every address";
  if (a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.is_v4_mapped())
    return "is not a unicast host address";
  if (a.is_link_local()) return "is link-local; the port forms its link-local address itself";
  return std::nullopt;
}

void add_address6(Diagnostics& d, const Value& v, const std::string& text, PortConfig& p) {
  auto c = ws::Ipv6Cidr::parse(text);
  if (!c) {
    d.error(v.pos, v.path + ": '" + text + "' is not an IPv6 address/prefix like 2001:db8::1/64");
    return;
  }
  if (auto why = bad_host_address6(*c)) {
    d.error(v.pos, v.path + ": " + c->to_string() + " " + *why);
    return;
  }
  for (const auto& o : p.addresses6) {
    if (o.addr == c->addr) {
      d.error(v.pos, v.path + ": " + c->addr.to_string() + " is listed twice");
      return;
    }
  }
  p.addresses6.push_back(*c);
}

}  // namespace

bool parse_addresses(Diagnostics& d, const Value& list, PortConfig& p, PortOrigin& o) {
  auto items = read_list(d, list);
  if (!items) return false;
  bool v4_seen = false;
  bool ok = true;
  for (const auto& v : *items) {
    auto s = read_string(d, v);
    if (!s) {
      ok = false;
      continue;
    }
    if (s->find(':') != std::string::npos) {
      add_address6(d, v, *s, p);
      continue;
    }
    if (v4_seen) {
      d.error(v.pos, v.path + ": a port has one IPv4 address; '" + *s + "' is a second");
      ok = false;
      continue;
    }
    v4_seen = true;
    if (!parse_address4(d, v, p, o)) ok = false;
  }
  if (ok && !v4_seen) {
    d.error(list.pos, list.path + ": needs one IPv4 address (IPv6-only ports are not supported)");
    return false;
  }
  return ok && v4_seen;
}

void parse_gateway6(Diagnostics& d, const Value& v, PortConfig& p) {
  auto s = read_string(d, v);
  if (!s) return;
  auto g = ws::Ipv6Addr::parse(*s);
  if (!g) {
    d.error(v.pos, v.path + ": '" + *s + "' is not an IPv6 address like fe80::1");
    return;
  }
  if (g->is_unspecified() || g->is_loopback() || g->is_multicast() || g->is_v4_mapped()) {
    d.error(v.pos, v.path + ": " + g->to_string() + " is not a unicast address");
    return;
  }
  // RFC 4861 8: routers are known by their link-local addresses; an on-link global one
  // is accepted too.
  const bool on_link =
      g->is_link_local() || std::any_of(p.addresses6.begin(), p.addresses6.end(),
                                        [&](const ws::Ipv6Cidr& c) { return c.contains(*g); });
  if (!on_link) {
    d.error(v.pos, v.path + ": " + g->to_string() +
                       " is neither link-local nor inside one of the port's IPv6 prefixes");
    return;
  }
  for (const auto& c : p.addresses6) {
    if (c.addr == *g) {
      d.error(v.pos, v.path + ": " + g->to_string() + " is the port's own address");
      return;
    }
  }
  p.gateway6 = *g;
}

void parse_ipv6(const MapView& m, Ipv6Config& out) {
  m.enumeration<LinkLocal>("link_local", out.link_local,
                           {{"stable", LinkLocal::stable}, {"eui64", LinkLocal::eui64}});
  m.uint("dad_transmits", 0, 10, out.dad_transmits);
  m.boolean("accept_ra", out.accept_ra);
  if (auto v = m.get("stable_secret_file")) {
    if (auto path = read_string(m.diag(), *v)) {
      auto key = read_key_file(m.diag(), *v, *path, out.stable_secret.size(),
                               "an RFC 7217 secret (stable_secret_file)");
      if (key) std::copy(key->bytes().begin(), key->bytes().end(), out.stable_secret.begin());
    }
  }
}

}  // namespace ws::config::detail
