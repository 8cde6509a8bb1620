#include "dataplane/checksum_hint.hpp"

#include "control/stats/layout.hpp"

namespace ws::dp {

std::string checksum_hint(const std::string& iface, const std::string& driver,
                          const LinkPeer& peer) {
  const std::string cause = "likely cause: TX checksum offload on ";
  const std::string effect = " leaves its frames' checksums unfinished; fix: ";
  if (driver != "veth" && !(driver.empty() && peer.linked)) {
    return cause + "a sender on this host" + effect + "ethtool -K <sending interface> tx off";
  }
  if (peer.name.empty()) {
    return cause + "the veth peer of " + iface + effect + "ethtool -K <the veth peer of " + iface +
           "> tx off (in its namespace)";
  }
  const std::string head = cause + "its veth peer " + peer.name + effect;
  const std::string fix = "ethtool -K " + peer.name + " tx off";
  if (!peer.netns.empty()) {
    std::string h = head + "ip netns exec " + peer.netns + " " + fix;
    // The hint is also a stats info value: a namespace name too long for it is left out.
    if (h.size() < stats::kInfoValueMax) return h;
  }
  return head + fix + (peer.other_netns ? " (in its namespace)" : "");
}

}  // namespace ws::dp
