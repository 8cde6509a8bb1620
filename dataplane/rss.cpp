#include "dataplane/rss.hpp"

#include <rte_ethdev.h>

#include <vector>

namespace ws::dp {

void rss_read(uint16_t port_id, RssTable& out, std::string& note) {
  out = RssTable{};
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port_id, &info) != 0 || info.reta_size == 0) {
    note += "RSS table unreadable: per-core port ranges for outgoing connections; ";
    return;
  }
  // Toeplitz is the default hash function of every DPDK driver with a readable key;
  // a device that reports another function is not modelled.
  std::vector<uint8_t> key(info.hash_key_size != 0 ? info.hash_key_size : 40);
  rte_eth_rss_conf conf{};
  conf.rss_key = key.data();
  conf.rss_key_len = static_cast<uint8_t>(key.size());
  if (rte_eth_dev_rss_hash_conf_get(port_id, &conf) != 0 || conf.rss_hf == 0) {
    note += "RSS key unreadable: per-core port ranges for outgoing connections; ";
    return;
  }
  const uint16_t groups = (info.reta_size + RTE_ETH_RETA_GROUP_SIZE - 1) / RTE_ETH_RETA_GROUP_SIZE;
  std::vector<rte_eth_rss_reta_entry64> reta(groups);
  for (auto& g : reta) g.mask = ~0ull;
  if (rte_eth_dev_rss_reta_query(port_id, reta.data(), info.reta_size) != 0) {
    note += "RSS redirection table unreadable: per-core port ranges for outgoing connections; ";
    return;
  }
  out.key = std::move(key);
  out.key.resize(conf.rss_key_len);
  out.reta.resize(info.reta_size);
  for (uint16_t i = 0; i < info.reta_size; ++i) {
    out.reta[i] = reta[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE];
  }
  out.tcp_ports = (conf.rss_hf & RTE_ETH_RSS_NONFRAG_IPV4_TCP) != 0;
  out.enabled = true;
  note += "outgoing connections pick local ports by the RSS hash (" +
          std::to_string(info.reta_size) + "-entry table); ";
}

}  // namespace ws::dp
