#include "dataplane/link_peer.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

namespace ws::dp {
namespace {

long read_number(const std::string& path) {
  std::ifstream f(path);
  long v = -1;
  if (!(f >> v)) return -1;
  return v;
}

// One rtnetlink request at a time, each answered by one message (no dumps).
class Rtnl {
 public:
  Rtnl() : fd_(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)), buf_(32768) {
    timeval tv{1, 0};  // a kernel that does not answer must not hold up the start
    if (fd_ >= 0) setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Rtnl() {
    if (fd_ >= 0) close(fd_);
  }
  Rtnl(const Rtnl&) = delete;
  Rtnl& operator=(const Rtnl&) = delete;

  // Sends the request built in `req` and returns the answer, or null (error, NLMSG_ERROR).
  nlmsghdr* ask(std::vector<char>& req) {
    if (fd_ < 0) return nullptr;
    auto* h = reinterpret_cast<nlmsghdr*>(req.data());
    h->nlmsg_flags = NLM_F_REQUEST;
    h->nlmsg_seq = ++seq_;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (sendto(fd_, req.data(), h->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0) {
      return nullptr;
    }
    for (int reads = 0; reads < 4; ++reads) {
      ssize_t n = recv(fd_, buf_.data(), buf_.size(), 0);
      if (n <= 0) return nullptr;
      auto len = static_cast<unsigned>(n);
      for (auto* r = reinterpret_cast<nlmsghdr*>(buf_.data()); NLMSG_OK(r, len);
           r = NLMSG_NEXT(r, len)) {
        if (r->nlmsg_seq != seq_) continue;
        return r->nlmsg_type == NLMSG_ERROR ? nullptr : r;
      }
    }
    return nullptr;
  }

 private:
  int fd_;
  uint32_t seq_ = 0;
  std::vector<char> buf_;
};

// A request: header, the fixed part `T`, then 32-bit attributes added with add_u32.
template <typename T>
std::vector<char> request(uint16_t type, const T& body) {
  std::vector<char> m(NLMSG_SPACE(sizeof(T)) + 64, 0);
  auto* h = reinterpret_cast<nlmsghdr*>(m.data());
  h->nlmsg_len = NLMSG_LENGTH(sizeof(T));
  h->nlmsg_type = type;
  std::memcpy(NLMSG_DATA(h), &body, sizeof(T));
  return m;
}

void add_u32(std::vector<char>& m, uint16_t type, uint32_t v) {
  auto* h = reinterpret_cast<nlmsghdr*>(m.data());
  auto* a = reinterpret_cast<rtattr*>(m.data() + NLMSG_ALIGN(h->nlmsg_len));
  a->rta_type = type;
  a->rta_len = RTA_LENGTH(sizeof v);
  std::memcpy(RTA_DATA(a), &v, sizeof v);
  h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

// Calls f(type, payload, length) for each attribute after the fixed part `T`.
template <typename T, typename F>
void for_each_attr(nlmsghdr* h, F f) {
  if (h->nlmsg_len < NLMSG_LENGTH(sizeof(T))) return;
  auto len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(T)));
  auto* a = reinterpret_cast<rtattr*>(static_cast<char*>(NLMSG_DATA(h)) + NLMSG_ALIGN(sizeof(T)));
  for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) f(a->rta_type, RTA_DATA(a), RTA_PAYLOAD(a));
}

std::optional<uint32_t> u32_of(const void* p, size_t n) {
  if (n < sizeof(uint32_t)) return std::nullopt;
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The namespace whose id (as this namespace numbers it) is `nsid`: RTM_GETNSID for each
// file `ip netns` keeps.
std::string netns_name(Rtnl& nl, const std::string& dir, int32_t nsid) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return {};
  std::string found;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = open((dir + "/" + e->d_name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    auto req = request(RTM_GETNSID, rtgenmsg{AF_UNSPEC});
    add_u32(req, NETNSA_FD, static_cast<uint32_t>(fd));
    std::optional<uint32_t> id;
    if (nlmsghdr* r = nl.ask(req); r != nullptr && r->nlmsg_type == RTM_NEWNSID) {
      for_each_attr<rtgenmsg>(r, [&](uint16_t t, const void* p, size_t n) {
        if (t == NETNSA_NSID) id = u32_of(p, n);
      });
    }
    close(fd);
    if (id && static_cast<int32_t>(*id) == nsid) {
      found = e->d_name;
      break;
    }
  }
  closedir(d);
  return found;
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
    std::string dir_path = sysfs_net;
    dir_path.append("/").append(name);
    if (read_number(dir_path + "/ifindex") == link && read_number(dir_path + "/iflink") == index) {
      p.name = name;
      break;
    }
  }
  closedir(dir);
  return p;
}

LinkPeer find_netns_link_peer(const std::string& iface, const std::string& netns_dir) {
  LinkPeer p;
  unsigned index = iface.empty() ? 0 : if_nametoindex(iface.c_str());
  if (index == 0) return p;
  Rtnl nl;
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = static_cast<int>(index);
  auto req = request(RTM_GETLINK, ifi);
  nlmsghdr* r = nl.ask(req);
  if (r == nullptr || r->nlmsg_type != RTM_NEWLINK) return p;
  std::optional<uint32_t> link, nsid;
  for_each_attr<ifinfomsg>(r, [&](uint16_t t, const void* v, size_t n) {
    if (t == IFLA_LINK) link = u32_of(v, n);
    if (t == IFLA_LINK_NETNSID) nsid = u32_of(v, n);
  });
  if (!link || *link == index) return p;
  p.linked = true;
  if (!nsid) return p;  // the peer is in this namespace: find_link_peer names it
  p.other_netns = true;
  ifi.ifi_index = static_cast<int>(*link);
  req = request(RTM_GETLINK, ifi);
  add_u32(req, IFLA_TARGET_NETNSID, *nsid);
  if (r = nl.ask(req); r != nullptr && r->nlmsg_type == RTM_NEWLINK) {
    for_each_attr<ifinfomsg>(r, [&](uint16_t t, const void* v, size_t n) {
      if (t == IFLA_IFNAME)
        p.name.assign(static_cast<const char*>(v), strnlen(static_cast<const char*>(v), n));
    });
  }
  p.netns = netns_name(nl, netns_dir, static_cast<int32_t>(*nsid));
  return p;
}

LinkPeer find_veth_peer(const std::string& iface) {
  LinkPeer p = find_link_peer("/sys/class/net", iface);
  if (!p.linked || !p.name.empty()) return p;
  LinkPeer q = find_netns_link_peer(iface, "/run/netns");
  return q.linked ? q : p;
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

}  // namespace ws::dp
