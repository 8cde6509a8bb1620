// Frames the kernel dropped before an af_packet port saw them. DPDK 22.11's af_packet
// PMD does not report its sockets' PACKET_STATISTICS drops as imissed, so a full
// TPACKET ring (the lcore busy elsewhere) loses frames that no counter shows. The data
// plane reads the drops itself, off the fast path, from the PMD's own sockets: found
// through /proc/self/fd and matched by the interface index they are bound to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ws::dp {

// The `iface=` value of an af_packet device string ("net_af_packet0,iface=veth0,..."),
// or "" when there is none.
std::string af_packet_iface(const std::string& device_args);

class AfPacketDrops {
 public:
  // Finds the packet sockets bound to `iface` (call after the port is probed; the PMD
  // opens one per queue pair at probe). False when none is found.
  bool attach(const std::string& iface);
  // Reads and accumulates the drops since the last call: the kernel resets the
  // counters on every PACKET_STATISTICS read, so each read is a delta. Returns the
  // total since attach(). One getsockopt per socket: for the stats path only.
  uint64_t poll();
  bool attached() const { return !fds_.empty(); }

 private:
  std::vector<int> fds_;
  uint64_t total_ = 0;
};

}  // namespace ws::dp
