#include "dataplane/checksum_hint.hpp"

#include <dirent.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace ws::dp {
namespace {

long read_number(const std::string& path) {
  std::ifstream f(path);
  long v = -1;
  if (!(f >> v)) return -1;
  return v;
}

}  // namespace

LinkPeer find_link_peer(const std::string& sysfs_net, const std::string& iface) {
  LinkPeer p;
  if (iface.empty() || iface.find('/') != std::string::npos) return p;
  long index = read_number(sysfs_net + "/" + iface + "/ifindex");
  long link = read_number(sysfs_net + "/" + iface + "/iflink");
  if (index < 0 || link < 0 || link == index) return p;
  p.linked = true;
  DIR* dir = opendir(sysfs_net.c_str());
  if (dir == nullptr) return p;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name == iface) continue;
    if (read_number(sysfs_net + "/" + name + "/ifindex") == link &&
        read_number(sysfs_net + "/" + name + "/iflink") == index) {
      p.name = name;
      break;
    }
  }
  closedir(dir);
  return p;
}

std::string interface_driver(const std::string& iface) {
  if (iface.empty() || iface.size() >= IFNAMSIZ) return {};
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, iface.data(), iface.size());
  ifr.ifr_data = reinterpret_cast<char*>(&info);
  int rc = ioctl(fd, SIOCETHTOOL, &ifr);
  close(fd);
  if (rc != 0) return {};
  return std::string(info.driver, strnlen(info.driver, sizeof info.driver));
}

std::string checksum_hint(const std::string& iface, const std::string& driver,
                          const LinkPeer& peer) {
  // Short enough for a stats info value (kInfoValueMax) with 15-character names.
  const std::string cause = "likely cause: TX checksum offload on ";
  const std::string unfinished = " leaves its frames' checksums unfinished; fix: ethtool -K ";
  if (driver == "veth" || (driver.empty() && peer.linked)) {
    if (!peer.name.empty()) {
      return cause + "its veth peer " + peer.name + unfinished + peer.name + " tx off";
    }
    return cause + "the veth peer of " + iface + unfinished + "<the veth peer of " + iface +
           "> tx off (in its namespace)";
  }
  return cause + "a sender on this host" + unfinished + "<sending interface> tx off";
}

}  // namespace ws::dp
