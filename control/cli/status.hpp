// `wirespeed-control status`: one screen about a running data plane, built from two
// snapshots `interval` apart: totals since the data plane started (from the second
// snapshot) next to rates (differences over the interval).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "control/cli/options.hpp"
#include "control/cli/settings.hpp"
#include "control/stats/reader.hpp"

namespace ws::cli {

struct PortStatus {
  std::string name, device, mac, address;
  std::optional<bool> link_up;  // wirespeed_port_link_up, when registered
  std::optional<int64_t> mtu;   // wirespeed_port_mtu_bytes, else the config
  double rx_packets_per_s = 0, rx_bits_per_s = 0, tx_packets_per_s = 0, tx_bits_per_s = 0;
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0, rx_missed = 0;
  uint64_t l4_checksum_errors = 0;  // wirespeed_port_l4_checksum_errors_total
  // The data plane's explanation of those errors, once it has given one; else "".
  std::string checksum_hint;
  std::optional<int64_t> mempool_in_use, mempool_size;
  // IPv6: each address (link-local first, "addr/len") with its duplicate address detection
  // state (tentative, preferred or duplicate; the worst over the cores), and the default
  // router ("" when none).
  std::vector<std::pair<std::string, std::string>> ipv6_addresses;
  std::string ipv6_router;
};

struct CoreStatus {
  uint32_t lcore = 0;
  std::optional<double> busy_ratio;  // from wirespeed_core_{busy,idle}_seconds_total
  // wirespeed_core_received_frames_total, wirespeed_core_connections_total and
  // wirespeed_core_redirected_out_frames_total (frames handed to other cores).
  double frames_per_s = 0;
  uint64_t connections = 0;
  double redirected_per_s = 0;
};

struct MessageCount {
  std::string direction;  // "received" or "sent"
  uint64_t total = 0;
  double per_s = 0;
};

struct ServiceStatus {
  std::string name, kind;
  uint64_t rx_bytes = 0, tx_bytes = 0;
  double rx_bytes_per_s = 0, tx_bytes_per_s = 0;
  std::vector<MessageCount> messages;  // by direction, in registration order
};

// One IPsec SA: what the data plane's info entries say of it (never its key), its packets
// and its errors by reason.
struct SaStatus {
  std::string name, direction, spi, mode, cipher, peer;
  uint64_t packets = 0;
  double packets_per_s = 0, bytes_per_s = 0;
  std::vector<std::pair<std::string, uint64_t>> errors;  // by reason, non-zero only
};

struct DropStatus {
  std::string reason;
  uint64_t total = 0;
  double per_s = 0;
};

// TCP and UDP over one address family ("ipv4" or "ipv6"): the *_by_family_total counters
// and wirespeed_tcp_connections_by_family.
struct FamilyStatus {
  std::string family;
  int64_t tcp_connections = 0;  // in the table, any state (TIME_WAIT included)
  int64_t tcp_established = 0;  // of those, in ESTABLISHED
  uint64_t tcp_segments_in = 0, tcp_segments_out = 0;
  uint64_t tcp_active_opens = 0, tcp_passive_opens = 0;
  uint64_t tcp_resets_sent = 0, tcp_resets_received = 0;
  uint64_t udp_in = 0, udp_out = 0;
  double tcp_segments_in_per_s = 0, tcp_segments_out_per_s = 0;
  double udp_in_per_s = 0, udp_out_per_s = 0;
};

struct StatusReport {
  int64_t pid = 0;
  double start_time_unix_s = 0;
  double uptime_s = 0;
  double interval_s = 0;
  std::string version;
  std::string segment_path;
  std::vector<PortStatus> ports;
  std::vector<CoreStatus> cores;
  std::vector<ServiceStatus> services;
  std::vector<SaStatus> sas;
  std::vector<std::pair<std::string, int64_t>> tcp_connections;  // by state
  uint64_t tcp_retransmitted_segments = 0;
  std::vector<FamilyStatus> families;    // empty when the data plane does not count them
  std::optional<int64_t> ndp_neighbors;  // IPv6 neighbour cache entries (every port and core)
  uint64_t drops_total = 0;
  std::vector<DropStatus> drops;      // every non-zero reason, highest totals first
  std::vector<DropStatus> top_drops;  // the first 10 of `drops`
};

// Pure: both snapshots must come from the same data-plane instance, `b` taken after `a`.
StatusReport build_status_report(const Settings& settings, const ws::stats::Snapshot& a,
                                 const ws::stats::Snapshot& b);
std::string render_text(const StatusReport& r);
std::string render_json(const StatusReport& r);

// Exit status: 0, or 1 with a message on stderr when no live data plane is found.
int run_status(const Options& options, const Settings& settings);

}  // namespace ws::cli
