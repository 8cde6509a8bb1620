// ports[]: one entry per DPDK port.
#include <algorithm>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Checks `s` is `n` hex digits followed by `sep` (or the end when sep is 0); advances it.
bool take_hex(std::string_view& s, size_t n, char sep) {
  if (s.size() < n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (!is_hex(s[i])) return false;
  }
  s.remove_prefix(n);
  if (sep == 0) return true;
  if (s.empty() || s[0] != sep) return false;
  s.remove_prefix(1);
  return true;
}

// A PCI address as DPDK takes it: [DDDD:]BB:DD.F (domain, bus, device, function; hex).
bool valid_pci(std::string_view s) {
  std::string_view t = s;
  if (s.size() == 12 && !take_hex(t, 4, ':')) return false;
  if (t.size() != 7) return false;
  if (!take_hex(t, 2, ':') || !take_hex(t, 2, '.') || !take_hex(t, 1, 0)) return false;
  return t.empty();
}

bool is_power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

void parse_descriptors(const MapView& m, std::string_view key, uint16_t& out) {
  auto v = m.get(key);
  if (!v) return;
  auto n = read_uint(m.diag(), *v, 64, 16384);
  if (!n) return;
  if (!is_power_of_two(*n)) {
    m.diag().error(v->pos, v->path + ": " + std::to_string(*n) + " is not a power of two");
    return;
  }
  out = static_cast<uint16_t>(*n);
}

// A host address must be usable as a source: not the subnet's network or broadcast address
// (where those exist, i.e. prefixes up to /30), and not a special-purpose address.
std::optional<std::string> bad_host_address(const ws::Ipv4Cidr& c) {
  const ws::Ipv4Addr a = c.addr;
  if (c.prefix_len == 0) return "a /0 prefix covers every address";
  if (a.is_any() || a.is_broadcast() || a.is_multicast() || a.is_loopback() || (a.v >> 28) == 0xf)
    return "is not a unicast host address";
  if (c.prefix_len <= 30 && a == c.network()) return "is the network address of its subnet";
  if (c.prefix_len <= 30 && a == c.directed_broadcast())
    return "is the broadcast address of its subnet";
  return std::nullopt;
}

}  // namespace

bool parse_address4(Diagnostics& d, const Value& v, PortConfig& p, PortOrigin& o) {
  auto c = read_cidr(d, v);
  if (!c) return false;
  if (auto why = bad_host_address(*c)) {
    d.error(v.pos, v.path + ": " + c->to_string() + " " + *why);
    return false;
  }
  p.address = *c;
  o.address = v.pos;
  return true;
}

namespace {

// How the port holds and hands over frames: its buffers, TSO, TCP/UDP checksums.
void parse_port_modes(MapView& m, PortConfig& p) {
  m.enumeration<FrameBuffers>("frame_buffers", p.frame_buffers,
                              {{"auto", FrameBuffers::automatic},
                               {"whole", FrameBuffers::whole},
                               {"chained", FrameBuffers::chained}});
  m.enumeration<Tso>("tso", p.tso, {{"auto", Tso::automatic}, {"off", Tso::off}});
  m.enumeration<L4Checksums>("l4_checksums", p.l4_checksums,
                             {{"on", L4Checksums::on}, {"off", L4Checksums::off}});
}

void parse_port(Diagnostics& d, const Value& item, PortConfig& p, PortOrigin& o) {
  MapView m(d, item,
            {"name", "device", "pci", "mtu", "rx_queues", "tx_queues", "rx_descriptors",
             "tx_descriptors", "address", "addresses", "gateway", "gateway6", "mac",
             "frame_buffers", "tso", "l4_checksums", "neighbors"});
  if (!m.is_map()) return;

  o.name = m.name(p.name, 32);

  const bool has_device = m.has("device");
  const bool has_pci = m.has("pci");
  if (has_device && has_pci) {
    d.error(m.key_pos("pci"), m.path() + ": give either 'device' or 'pci', not both");
  } else if (!has_device && !has_pci) {
    d.error(m.pos(), m.path() + ": missing required key 'device' (a DPDK vdev) or 'pci'");
  }
  m.string("device", p.device);
  if (auto v = m.get("pci")) {
    if (auto s = read_string(d, *v)) {
      if (valid_pci(*s)) {
        p.pci = *s;
      } else {
        d.error(v->pos, v->path + ": '" + *s + "' is not a PCI address like \"0000:03:00.0\"");
      }
    }
  }

  if (m.uint("mtu", 68, 9600, p.mtu)) o.mtu = m.get("mtu")->pos;
  o.rx_queues_given = m.uint("rx_queues", 1, 64, p.rx_queues);
  o.tx_queues_given = m.uint("tx_queues", 1, 64, p.tx_queues);
  parse_descriptors(m, "rx_descriptors", p.rx_descriptors);
  parse_descriptors(m, "tx_descriptors", p.tx_descriptors);
  parse_port_modes(m, p);

  // `address` is the shorthand of `addresses` with one IPv4 address.
  bool address_ok = false;
  if (m.has("address") && m.has("addresses")) {
    d.error(m.key_pos("addresses"), m.path() + ": give either 'address' or 'addresses', not both");
  } else if (auto list = m.get("addresses")) {
    address_ok = parse_addresses(d, *list, p, o);
  } else if (m.require("address")) {
    address_ok = parse_address4(d, *m.get("address"), p, o);
  }
  if (auto v = m.get("gateway6")) parse_gateway6(d, *v, p);
  if (auto v = m.get("neighbors")) parse_neighbors(d, *v, address_ok, p);

  if (auto v = m.get("gateway")) {
    if (auto g = read_ipv4(d, *v)) {
      // NOLINTNEXTLINE(bugprone-branch-clone): kept without checks only when the address failed
      if (!address_ok) {
        p.gateway = *g;  // the address error is already reported; nothing to compare against
      } else if (!p.address.contains(*g)) {
        d.error(v->pos, v->path + ": " + g->to_string() + " is outside the port's subnet " +
                            ws::Ipv4Cidr{p.address.network(), p.address.prefix_len}.to_string());
      } else if (*g == p.address.addr) {
        d.error(v->pos, v->path + ": " + g->to_string() + " is the port's own address");
      } else if (p.address.prefix_len <= 30 &&
                 (*g == p.address.network() || *g == p.address.directed_broadcast())) {
        d.error(v->pos, v->path + ": " + g->to_string() +
                            " is the network or broadcast address of the subnet");
      } else {
        p.gateway = *g;
      }
    }
  }

  if (auto v = m.get("mac")) {
    if (auto mac = read_mac(d, *v)) {
      if (mac->is_zero() || mac->is_multicast()) {
        d.error(v->pos, v->path + ": " + mac->to_string() +
                            " is not a unicast MAC address (zero, multicast or broadcast)");
      } else {
        p.mac = *mac;
      }
    }
  }
}

}  // namespace

void parse_ports(Diagnostics& d, const Value& list, std::vector<PortConfig>& out,
                 Origins& origins) {
  auto items = read_list(d, list);
  if (!items) return;
  if (items->empty()) {
    d.error(list.pos, "ports: at least one port is required");
    return;
  }
  for (const auto& item : *items) {
    PortConfig p;
    PortOrigin o;
    o.item = item.pos;
    parse_port(d, item, p, o);
    out.push_back(std::move(p));
    origins.ports.push_back(o);
  }
}

}  // namespace ws::config::detail
