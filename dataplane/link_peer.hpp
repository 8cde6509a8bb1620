// What the data plane can learn about the kernel interface under an af_packet port: its
// driver, and the other end of a veth pair (possibly in another network namespace). Used
// at start only, to explain checksum failures (checksum_hint.hpp).
#pragma once

#include <string>

namespace ws::dp {

// The other end of an interface that is one end of a linked pair such as a veth.
struct LinkPeer {
  bool linked = false;       // the interface's link index names another interface
  bool other_netns = false;  // the peer is in another network namespace
  std::string name;          // the peer's name, when found; else ""
  std::string netns;         // that namespace's name (as `ip netns` knows it), when found
};

// Reads <sysfs_net>/<iface>/{ifindex,iflink} (sysfs_net is normally /sys/class/net): a
// veth's iflink is its peer's ifindex. A candidate of that index counts as the peer only if
// its own iflink points back, as the index may belong to another namespace. Sees only this
// network namespace.
LinkPeer find_link_peer(const std::string& sysfs_net, const std::string& iface);

// Asks rtnetlink for the peer of `iface` when it lives in another network namespace: the
// link's IFLA_LINK and IFLA_LINK_NETNSID, then the peer's name through IFLA_TARGET_NETNSID
// (Linux 4.20+), and the namespace's name by matching the ids of the files in `netns_dir`
// (normally /run/netns, where `ip netns` keeps them). Fields stay empty when unknown.
LinkPeer find_netns_link_peer(const std::string& iface, const std::string& netns_dir);

// find_link_peer on /sys/class/net, then find_netns_link_peer on /run/netns when the peer
// is not in this namespace.
LinkPeer find_veth_peer(const std::string& iface);

// The driver of a network interface as `ethtool -i` shows it ("veth", "tun"), or "".
std::string interface_driver(const std::string& iface);

}  // namespace ws::dp
