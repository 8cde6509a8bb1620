#include "dataplane/capture.hpp"

#include <rte_errno.h>
#include <rte_pdump.h>
#include <time.h>

#include <algorithm>
#include <cstdio>

#include "control/stats/clock.hpp"
#include "dataplane/port.hpp"

namespace ws::dp {

namespace {

// How long a reader may go without beating before its request is dropped. The reader
// beats every few milliseconds; a second covers a reader descheduled on a busy machine.
constexpr Duration kReaderTimeout = Duration::seconds(2);

int64_t realtime_ns() { return static_cast<int64_t>(stats::clock_ns(CLOCK_REALTIME)); }

}  // namespace

CaptureTap::CaptureTap(capture::Header* header, capture::RingWriter ring, StackCounters* counters,
                       const TscClock* clock, int64_t realtime_offset_ns)
    : header_(header),
      ring_(ring),
      counters_(counters),
      clock_(clock),
      realtime_offset_ns_(realtime_offset_ns) {}

CaptureTap* CaptureTap::none() {
  static CaptureTap unarmed;
  return &unarmed;
}

bool CaptureTap::selected(uint32_t what, uint16_t port, uint16_t queue) const {
  const capture::Request& r = header_->request;
  return (r.what & what) != 0 && (r.port == capture::kAnyPort || r.port == port) &&
         (r.queue == capture::kAnyQueue || r.queue == queue);
}

void CaptureTap::rx(rte_mbuf* const* mbufs, uint16_t n, uint16_t port, uint16_t queue) {
  if (!selected(capture::kRx, port, queue)) return;
  for (uint16_t i = 0; i < n; ++i)
    copy(mbufs[i], port, queue, capture::Direction::kRx, capture::kNoReason);
}

void CaptureTap::tx(const rte_mbuf* m, uint16_t port, uint16_t queue) {
  if (selected(capture::kTx, port, queue)) {
    copy(m, port, queue, capture::Direction::kTx, capture::kNoReason);
  }
}

void CaptureTap::drop(const rte_mbuf* m, uint16_t port, uint16_t queue, capture::Direction dir,
                      DropReason reason) {
  if (selected(capture::kDrops, port, queue)) {
    copy(m, port, queue, dir, static_cast<uint16_t>(reason));
  }
}

// One frame into the ring: up to the snap length, gathered from the mbuf chain.
void CaptureTap::copy(const rte_mbuf* m, uint16_t port, uint16_t queue, capture::Direction dir,
                      uint16_t reason) {
  uint32_t caplen = std::min<uint32_t>(m->pkt_len, header_->request.snaplen);
  capture::Record* rec = nullptr;
  uint8_t* out = ring_.reserve(caplen, rec);
  if (out == nullptr) {
    ++counters_->capture_dropped;
    return;
  }
  rec->wirelen = m->pkt_len;
  rec->port = port;
  rec->queue = queue;
  rec->time_ns =
      static_cast<uint64_t>(static_cast<int64_t>(clock_->now().ns()) + realtime_offset_ns_);
  rec->dir = dir;
  rec->reason = reason;
  uint32_t left = caplen;
  for (const rte_mbuf* s = m; s != nullptr && left != 0; s = s->next) {
    uint32_t take = std::min<uint32_t>(left, s->data_len);
    std::memcpy(out, rte_pktmbuf_mtod(s, const uint8_t*), take);
    out += take;
    left -= take;
  }
  rec->caplen = caplen - left;  // a chain shorter than pkt_len says: keep what is there
  ring_.commit();
  ++counters_->capture_copied;
}

void enable_pdump(const config::Config& cfg) {
  if (!cfg.dataplane.hugepages) return;
  if (rte_pdump_init() != 0) {
    std::fprintf(stderr, "wirespeed: warning: dpdk-dumpcap cannot attach: rte_pdump_init: %s\n",
                 rte_strerror(rte_errno));
    return;
  }
  std::printf("wirespeed: dpdk-dumpcap and dpdk-pdump may attach (--file-prefix %s)\n",
              cfg.dataplane.file_prefix.c_str());
}

bool Capture::init(const std::string& path, uint32_t cores, const std::vector<PortInfo>& ports,
                   std::string& error) {
  std::vector<capture::PortDesc> descs;
  descs.reserve(ports.size());
  for (const PortInfo& p : ports) descs.push_back({p.name, p.mtu, p.rx_queues, p.tx_queues});
  ready_ = segment_.create(path, cores, capture::kDefaultRingBytes, descs, error);
  clock_ = std::make_unique<TscClock>();
  realtime_offset_ns_ = realtime_ns() - static_cast<int64_t>(clock_->now().ns());
  return ready_;
}

CaptureTap Capture::tap(uint32_t core, StackCounters* counters) const {
  if (!ready_) return CaptureTap{};
  capture::RingWriter ring(segment_.ring(core), segment_.ring_data(core),
                           segment_.header()->ring_bytes);
  return CaptureTap(segment_.header(), ring, counters, clock_.get(), realtime_offset_ns_);
}

void Capture::watch(Instant now) {
  if (!ready_) return;
  capture::Header* h = segment_.header();
  uint64_t beat = h->reader_beat.load(std::memory_order_acquire);
  if (beat != last_beat_ || h->armed.load(std::memory_order_relaxed) == 0) {
    last_beat_ = beat;
    beat_seen_ = now;
    return;
  }
  if (now - beat_seen_ > kReaderTimeout) {
    h->armed.store(0, std::memory_order_release);
    std::fprintf(stderr, "wirespeed: capture reader stopped beating; capture disarmed\n");
    beat_seen_ = now;
  }
}

void Capture::shutdown() {
  if (ready_) segment_.remove();
  ready_ = false;
}

}  // namespace ws::dp
