#include "dataplane/af_packet_drops.hpp"

#include <dirent.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ws::dp {

std::string af_packet_iface(const std::string& device_args) {
  // Keys are separated by commas; the first field is the device name itself.
  size_t pos = 0;
  while ((pos = device_args.find(',', pos)) != std::string::npos) {
    ++pos;
    if (device_args.compare(pos, 6, "iface=") == 0) {
      size_t end = device_args.find(',', pos);
      return device_args.substr(pos + 6, end == std::string::npos ? end : end - pos - 6);
    }
  }
  return {};
}

bool AfPacketDrops::attach(const std::string& iface) {
  fds_.clear();
  total_ = 0;
  unsigned ifindex = if_nametoindex(iface.c_str());
  if (ifindex == 0) return false;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return false;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    int domain = 0;
    socklen_t len = sizeof(domain);
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) continue;
    if (domain != AF_PACKET) continue;
    sockaddr_ll sll{};
    socklen_t alen = sizeof(sll);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&sll), &alen) != 0) continue;
    if (sll.sll_ifindex != static_cast<int>(ifindex)) continue;
    fds_.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  // Drops from before attach (the ring filling while the port was set up) are not
  // ours to report as traffic loss; start from zero.
  poll();
  total_ = 0;
  return !fds_.empty();
}

uint64_t AfPacketDrops::poll() {
  for (int fd : fds_) {
    // tpacket_stats_v3 is a superset of the TPACKET_V1/V2 layout the PMD uses; the
    // kernel writes the part that applies to the socket's ring version.
    tpacket_stats_v3 st{};
    socklen_t len = sizeof(st);
    if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) total_ += st.tp_drops;
  }
  return total_;
}

}  // namespace ws::dp
