#include "dataplane/ipv6_port.hpp"

#include <rte_ethdev.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "stack/iface/link_local.hpp"

namespace ws::dp {

Ipv6Addr link_local_of(const config::Config& cfg, const MacAddr& mac) {
  return cfg.ipv6.link_local == config::LinkLocal::eui64
             ? eui64_link_local(mac)
             : stable_link_local(mac, cfg.ipv6.stable_secret);
}

namespace {}  // namespace

void ipv6_interface(const config::Config& cfg, const config::PortConfig& pc, const MacAddr& mac,
                    InterfaceConfig& ic) {
  ic.addresses6 = pc.addresses6;
  ic.gateway6 = pc.gateway6;
  if (!ic.runs_ipv6()) return;
  ic.link_local = link_local_of(cfg, mac);
  ic.dad_transmits = cfg.ipv6.dad_transmits;
  ic.accept_ra = cfg.ipv6.accept_ra;
}

StackConfig ipv6_stack_config(uint32_t core) {
  StackConfig sc;
  // Every core runs DAD for every address; the first core speaks for all of them.
  if (core == 0) {
    sc.on_duplicate_address = [](uint16_t iface, const Ipv6Addr& a) {
      std::fprintf(stderr,
                   "wirespeed: interface %u: IPv6 address %s is in use by another node "
                   "(duplicate address detection, RFC 4862); it is not used\n",
                   iface, a.to_string().c_str());
    };
  }
  return sc;
}

std::string ipv6_multicast_filter(const config::Config& cfg, const config::PortConfig& pc,
                                  uint16_t port_id, const MacAddr& mac) {
  if (pc.addresses6.empty() && !pc.gateway6) return "";
  std::vector<Ipv6Addr> groups = {Ipv6Addr::all_nodes(), link_local_of(cfg, mac).solicited_node()};
  for (const auto& c : pc.addresses6) groups.push_back(c.addr.solicited_node());
  std::vector<rte_ether_addr> macs;
  for (const auto& g : groups) {
    rte_ether_addr a{};
    std::memcpy(a.addr_bytes, g.multicast_mac().b.data(), 6);
    macs.push_back(a);
  }
  int rc = rte_eth_dev_set_mc_addr_list(port_id, macs.data(), static_cast<uint32_t>(macs.size()));
  if (rc == 0) return "ipv6 multicast filter of " + std::to_string(macs.size()) + " groups";
  // No exact filter (af_packet, tap, memif have none): take every multicast frame; the
  // stack drops the groups it is not in (eth_not_for_us).
  rc = rte_eth_allmulticast_enable(port_id);
  if (rc == 0) return "ipv6 all-multicast (no multicast filter)";
  return std::string("ipv6 multicast: no filter and no all-multicast (") +
         std::strerror(rc < 0 ? -rc : rc) + "); relying on promiscuous mode";
}

}  // namespace ws::dp
