// A client service split over several cores reports as one.
//
// With several cores, a TCP client's connections are divided among them, each core
// opening its share from local ports it owns (steering.hpp), so that the flows spread
// over the cores on both ends. Each core posts its share's reports here; the lowest core
// that runs the service prints the merged ones: progress once a second, and the final
// report once every share has finished. Off the packet path (once a second per core),
// so a mutex is fine.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "stack/apps/service.hpp"
#include "stack/core/latency_histogram.hpp"

namespace ws::dp {

// A core's share of a client's connections, message count and rate: the totals divided
// by the number of shares, the remainder going to the first shares.
struct ClientShare {
  uint32_t index = 0;
  uint32_t shares = 1;
  uint64_t of(uint64_t total) const { return total / shares + (index < total % shares ? 1 : 0); }
};

class ClientReports {
 public:
  ClientReports(size_t services, uint32_t cores);

  // Core `core` runs a share of service `service` (before the cores start).
  void join(size_t service, uint32_t core);
  // The core whose reports() prints the service's merged reports.
  bool reporter(size_t service, uint32_t core) const;
  // A share's report (progress or final) and its round-trip histogram when it has one.
  void post(size_t service, uint32_t core, const ClientReport& r, const LatencyHistogram* rtt);
  // On the reporter: the merged report due, if any (progress after the reporter's own
  // progress was posted; the final one once, when every share is final).
  bool merged(size_t service, ClientReport& out);
  // Every client service that runs has printed its final report.
  bool all_final() const;

 private:
  struct Share {
    bool joined = false;
    bool posted = false;
    ClientReport last;
    LatencyHistogram rtt;
  };
  struct Entry {
    std::vector<Share> shares;  // by core
    bool progress_due = false;
    bool final_done = false;
    bool any = false;
    uint32_t reporter = 0;
  };
  static ClientReport sum(const Entry& e);
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
};

// What a client's final report says of the service besides its figures.
struct ClientReportInfo {
  std::string_view name;
  std::string_view kind;      // config::to_string(ServiceKind)
  std::string_view protocol;  // config::to_string(Protocol)
  uint32_t message_size = 0;
};

// The final report as one JSON object (the service's `report:` file).
std::string client_report_json(const ClientReportInfo& info, const ClientReport& r);
// Writes it to `path`; false when the file cannot be written.
bool write_client_report(const std::string& path, const ClientReportInfo& info,
                         const ClientReport& r);

}  // namespace ws::dp
