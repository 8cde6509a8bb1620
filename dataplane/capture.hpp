// Packet capture on the data plane's side: the capture segment (control/capture/) is
// created at start; each core gets a CaptureTap over its own ring. With no capture
// running, a core pays one load and one well-predicted branch per RX burst and per TX
// flush (`armed()`); with one running, it copies the frames the request asks for into its
// ring and never waits: a full ring drops the copy and counts it.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "control/capture/ring.hpp"
#include "control/capture/segment.hpp"
#include "control/config/config.hpp"
#include "dataplane/clock.hpp"
#include "stack/core/counters.hpp"
#include "stack/core/drops.hpp"
#include "stack/core/time.hpp"

namespace ws::dp {

struct PortInfo;

// With hugepages, DPDK's own capture tools (dpdk-dumpcap, dpdk-pdump) can attach to the
// data plane as secondary processes: this registers the pdump server for them. Without
// hugepages (--no-huge) a secondary process cannot share the primary's memory, so there is
// nothing to register; `wirespeed-control capture` works either way.
void enable_pdump(const config::Config& cfg);

class CaptureTap {
 public:
  CaptureTap() = default;
  CaptureTap(capture::Header* header, capture::RingWriter ring, StackCounters* counters,
             const TscClock* clock, int64_t realtime_offset_ns);
  // A tap that is never armed, for queues that have no capture.
  static CaptureTap* none();

  bool armed() const {
    return header_ != nullptr && header_->armed.load(std::memory_order_acquire) != 0;
  }
  // The calls below are made only while armed() holds.
  bool wants(uint32_t what) const { return (header_->request.what & what) != 0; }
  void rx(rte_mbuf* const* mbufs, uint16_t n, uint16_t port, uint16_t queue);
  void tx(const rte_mbuf* m, uint16_t port, uint16_t queue);
  void drop(const rte_mbuf* m, uint16_t port, uint16_t queue, capture::Direction dir,
            DropReason reason);

 private:
  bool selected(uint32_t what, uint16_t port, uint16_t queue) const;
  void copy(const rte_mbuf* m, uint16_t port, uint16_t queue, capture::Direction dir,
            uint16_t reason);

  capture::Header* header_ = nullptr;
  capture::RingWriter ring_;
  StackCounters* counters_ = nullptr;
  const TscClock* clock_ = nullptr;
  int64_t realtime_offset_ns_ = 0;  // CLOCK_REALTIME minus *clock_, fixed at start
};

class Capture {
 public:
  // Creates the segment for `cores` cores. On failure capture is unavailable (every tap
  // stays unarmed) and `error` says why; the data plane runs on.
  bool init(const std::string& path, uint32_t cores, const std::vector<PortInfo>& ports,
            std::string& error);
  // A tap for `core`, writing its copy counters into `counters`.
  CaptureTap tap(uint32_t core, StackCounters* counters) const;
  // From the main core's periodic step: disarms a request whose reader stopped beating
  // (killed, or stopped without cleaning up), so copies do not go on for nobody.
  void watch(Instant now);
  void shutdown();

 private:
  capture::Segment segment_;
  std::unique_ptr<TscClock> clock_;  // one TSC for every core's timestamps
  int64_t realtime_offset_ns_ = 0;
  bool ready_ = false;
  uint64_t last_beat_ = 0;
  Instant beat_seen_ = Instant::from_ns(0);
};

}  // namespace ws::dp
