// Checks that span several items or sections. They run after parsing and only look at values
// that parsed cleanly (their origin position is set), so one mistake gives one error.
#include <algorithm>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

std::string line_of(Pos p) { return "line " + std::to_string(p.line); }

bool overlaps(const ws::Ipv4Cidr& a, const ws::Ipv4Cidr& b) {
  // Two prefixes overlap exactly when the shorter one contains the other's network.
  return a.prefix_len <= b.prefix_len ? a.contains(b.network()) : b.contains(a.network());
}

std::string subnet(const ws::Ipv4Cidr& c) {
  return ws::Ipv4Cidr{c.network(), c.prefix_len}.to_string();
}

void check_ports(Diagnostics& d, const Config& c, const Origins& o) {
  for (size_t i = 0; i < c.ports.size(); ++i) {
    const PortConfig& p = c.ports[i];
    const PortOrigin& po = o.ports[i];
    for (size_t j = 0; j < i; ++j) {
      const PortConfig& q = c.ports[j];
      const PortOrigin& qo = o.ports[j];
      if (po.name && qo.name && p.name == q.name) {
        d.error(*po.name, "ports[" + std::to_string(i) + "].name: duplicate port name '" + p.name +
                              "' (first given at " + line_of(*qo.name) + ")");
      }
      if (po.address && qo.address && overlaps(p.address, q.address)) {
        d.error(*po.address, "ports[" + std::to_string(i) + "].address: subnet " +
                                 subnet(p.address) + " overlaps port '" + q.name + "' (" +
                                 subnet(q.address) + ", " + line_of(*qo.address) + ")");
      }
    }
    // Every RX and TX descriptor can hold an mbuf at once; a pool smaller than the rings
    // starves RX refill and the port stops receiving.
    const uint64_t ring_mbufs =
        uint64_t{p.rx_queues} * p.rx_descriptors + uint64_t{p.tx_queues} * p.tx_descriptors;
    if (ring_mbufs >= c.dataplane.mbufs) {
      const std::string what = "the rings of port '" + p.name + "' hold up to " +
                               std::to_string(ring_mbufs) +
                               " mbufs (rx_queues x rx_descriptors + " +
                               "tx_queues x tx_descriptors), not fewer than dataplane.mbufs (" +
                               std::to_string(c.dataplane.mbufs) + ")";
      if (o.mbufs) {
        d.error(*o.mbufs, "dataplane.mbufs: too small: " + what);
      } else {
        d.error(po.item, "ports[" + std::to_string(i) + "]: " + what +
                             "; raise dataplane.mbufs or use fewer descriptors");
      }
    }
  }

  // A TX batch holds whole segments, so it must take at least one full-MTU frame.
  if (o.max_batch_bytes) {
    for (size_t i = 0; i < c.ports.size(); ++i) {
      if (o.ports[i].mtu && c.ports[i].mtu > c.pipeline.max_batch_bytes) {
        d.error(*o.max_batch_bytes,
                "pipeline.max_batch_bytes: " + std::to_string(c.pipeline.max_batch_bytes) +
                    " is smaller than the MTU of port '" + c.ports[i].name + "' (" +
                    std::to_string(c.ports[i].mtu) + ")");
        break;
      }
    }
  }
}

void check_services(Diagnostics& d, const Config& c, const Origins& o) {
  for (size_t i = 0; i < c.services.size(); ++i) {
    const ServiceConfig& s = c.services[i];
    const ServiceOrigin& so = o.services[i];
    const std::string path = "services[" + std::to_string(i) + "]";
    for (size_t j = 0; j < i; ++j) {
      const ServiceConfig& t = c.services[j];
      const ServiceOrigin& to = o.services[j];
      if (so.name && to.name && s.name == t.name) {
        d.error(*so.name, path + ".name: duplicate service name '" + s.name + "' (first given at " +
                              line_of(*to.name) + ")");
      }
      if (so.port && to.port && s.protocol == t.protocol && s.port == t.port) {
        d.error(*so.port, path + ".port: " + std::string(to_string(s.protocol)) + " port " +
                              std::to_string(s.port) + " is already used by service '" + t.name +
                              "' (" + line_of(*to.port) + ")");
      }
    }
  }
}

}  // namespace

void validate(Diagnostics& d, const Config& config, const Origins& origins) {
  check_ports(d, config, origins);
  check_services(d, config, origins);
  validate_ipsec(d, config, origins);
}

}  // namespace ws::config::detail
