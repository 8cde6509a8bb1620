#include "dataplane/pipeline.hpp"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "control/config/tcp_settings.hpp"
#include "dataplane/eal_args.hpp"
#include "dataplane/heap.hpp"
#include "dataplane/ipsec.hpp"
#include "dataplane/ipv6_port.hpp"
#include "dataplane/rx_frame.hpp"
#include "dataplane/services.hpp"

namespace ws::dp {

namespace {

// The timer slack of an `idle: adaptive` core's thread: Linux's default (50 us) would
// stretch each of the short sleeps of idle_policy.hpp to 50 us and more.
constexpr unsigned long kTimerSlackNs = 1000;
// The RX queue reported for frames another core received and handed over (steering.hpp).
constexpr uint16_t kHandedOverQueue = 0xffff;
// How many frames ahead of its turn a frame's connection is prefetched: its table slot,
// requested before the burst, has arrived by then, and the connection arrives in time.
constexpr uint16_t kConnAhead = 4;
// The most frames one rx_burst asks for (and receive_all takes).
constexpr uint16_t kMaxRxBurst = 32;

// A received frame's first segment: where its headers are.
std::span<const uint8_t> first_segment(const rte_mbuf* m) {
  return {rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m)};
}

RxMeta::Cksum decode(uint64_t ol, uint64_t mask, uint64_t good, uint64_t bad) {
  uint64_t v = ol & mask;
  if (v == good) return RxMeta::Cksum::kGood;
  if (v == bad) return RxMeta::Cksum::kBad;
  return RxMeta::Cksum::kUnknown;
}

// The stack's TCP settings from the config (to_stack_tcp), and how this core picks local ports for
// the connections it opens, so that replies arrive where the connection lives:
// - where the port spreads flows by RSS and its key and table could be read, a local port
//   is fine when the NIC's Toeplitz hash of the returning packets selects an RX queue of
//   this core;
// - where the port is steered in software (steering.hpp), when this core owns the tuple.
// Either way a tuple has one owner, so connections of different cores never collide in
// TIME_WAIT.
tcp::TcpConfig tcp_config(const config::Config& cfg, uint32_t core,
                          const std::vector<PortInfo>& ports, const Steering& steering) {
  tcp::TcpConfig c = config::to_stack_tcp(cfg.tcp);
  // RFC 6528: the ISN key must be secret and random per boot of the data plane.
  if (getrandom(c.isn_secret.data(), c.isn_secret.size(), 0) !=
      static_cast<ssize_t>(c.isn_secret.size())) {
    uint64_t seed = rte_rdtsc();
    for (auto& b : c.isn_secret) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      b = static_cast<uint8_t>(seed >> 56);
    }
  }
  auto n = static_cast<uint32_t>(cfg.dataplane.lcores.size());
  std::vector<RssRoute> routes;
  for (size_t i = 0; i < ports.size() && i < cfg.ports.size(); ++i) {
    routes.push_back(RssRoute{cfg.ports[i].address, cfg.ports[i].gateway.has_value(),
                              ports[i].rx_queues, ports[i].rss_table,
                              steering.steered(ports[i].port_id), cfg.ports[i].addresses6,
                              cfg.ports[i].gateway6.has_value()});
  }
  RssPortSelector selector(std::move(routes), core, n, steering.owner());
  if (selector.active() && n > 1) c.port_ok = std::move(selector);
  return c;
}

}  // namespace

Pipeline::Pipeline(uint32_t core_index, const config::Config& cfg,
                   const std::vector<PortInfo>& ports, PipelineShared shared)
    : core_(core_index),
      cfg_(cfg),
      ports_(ports),
      metrics_(shared.metrics),
      capture_(shared.capture),
      steering_(shared.steering),
      client_reports_(shared.reports),
      stop_(shared.stop),
      stack_(ipv6_stack_config(core_index)),
      tcp_(stack_, stack_.drops(), tcp_config(cfg, core_index, ports, shared.steering)),
      tcp_transport_(tcp_),
      faults_(cfg.dataplane.faults, core_index),
      tap_(shared.capture.tap(core_index, &stack_.counters())),
      steer_(shared.steering, core_index),
      adaptive_(cfg.dataplane.idle == config::IdleMode::adaptive) {
  stack_.set_tcp(&tcp_transport_);
  size_t n_cores = cfg.dataplane.lcores.size();
  for (size_t i = 0; i < ports.size(); ++i) {
    const auto& p = ports[i];
    const auto& pc = cfg.ports[i];
    // TX queue = core index (port_setup checked there are enough); RX queues are
    // dealt round-robin over the cores.
    uint16_t txq = static_cast<uint16_t>(core_ % p.tx_queues);
    ios_.push_back(std::make_unique<MbufIo>(p.port_id, txq, p.pool, p.tx_offloads, p.max_frame,
                                            stack_.drops(), stack_.counters()));
    if (p.tx_chains) ios_.back()->enable_chains();
    holder_.add_pool(p.pool);
    InterfaceConfig ic;
    ic.name = p.name;
    ic.mac = p.mac;
    ic.address = pc.address;
    ic.gateway = pc.gateway;
    for (const auto& n : pc.neighbors) ic.static_neighbors.push_back({n.address, n.mac});
    ic.mtu = p.mtu;
    ipv6_interface(cfg, pc, p.mac, ic);
    if (faults_.enabled()) ios_.back()->set_faults(&faults_);
    auto idx = stack_.add_interface(ic, *ios_.back());
    ios_.back()->set_tap(&tap_, idx);
    if (iface_of_port_.size() <= p.port_id) iface_of_port_.resize(p.port_id + 1u, 0);
    iface_of_port_[p.port_id] = idx;
    for (uint16_t q = 0; q < p.rx_queues; ++q) {
      if (q % n_cores == core_) {
        rxqs_.push_back(RxQueue{p.port_id, q, idx, rx_ring_frames(pc), p.l4_checksums_off});
      }
    }
  }
}

Pipeline::~Pipeline() {
  // stack_ outlives ios_ (members die in reverse order): frames it still holds (waiting
  // for ARP at shutdown) go back through their MbufIo while that still exists.
  stack_.release_buffers();
}

// Which share of client service `service` this core runs, if any. `connections`, `count`
// and `rate` are totals over all cores, and one merged report describes the run
// (client_reports.hpp).
// - TCP clients are divided over as many cores as there are connections (and messages
//   and messages per second, so that every share has at least one of each); each core
//   opens its share from local ports whose replies come back to it.
// - A UDP client has one socket: it runs on the core that owns the traffic between its
//   local address and its target when the port is steered in software, else on core 0.
//   So does a TCP client whose target an IPsec SA covers: the SA's core owns all of it.
bool Pipeline::client_share(size_t service, ClientShare& share) const {
  const auto& sc = cfg_.services[service];
  const auto n = static_cast<uint32_t>(cfg_.dataplane.lcores.size());
  uint32_t runner = 0;
  uint32_t pinned = FlowOwner::kNone;
  for (size_t i = 0; i < ports_.size() && i < cfg_.ports.size() && sc.target; ++i) {
    if (!steering_.steered(ports_[i].port_id)) continue;
    const IpAddr local =
        port_address_for(cfg_.ports[i].address, cfg_.ports[i].addresses6, sc.target->addr);
    runner = steering_.owner().of_hosts(local, sc.target->addr);
    pinned = steering_.owner().pinned(local, sc.target->addr);
    break;
  }
  // A UDP client, or a TCP client whose target an IPsec SA covers (pinned to one core).
  if (sc.protocol == config::Protocol::udp || pinned != FlowOwner::kNone) {
    share = ClientShare{};
    return core_ == runner;
  }
  uint64_t shares = std::max<uint32_t>(1, std::min<uint32_t>(n, sc.connections));
  if (sc.rate != 0) shares = std::min(shares, sc.rate);
  if (sc.count != 0) shares = std::min(shares, sc.count);
  share = ClientShare{core_, static_cast<uint32_t>(shares)};
  return core_ < shares;
}

bool Pipeline::start(std::string& error) {
  Instant now = clock_.now();
  esp_ = make_esp_layer(cfg_, core_, steering_.owner(), error);
  if (!esp_ && !error.empty()) return false;
  stack_.set_ipsec(esp_.get());
  sample_.esp = esp_.get();
  // One announcement is enough: the core that owns RX queue 0 sends it. Before the
  // services: a client connects as it starts, and without DAD (dad_transmits 0) its IPv6
  // source address is usable only once the stack has started.
  if (!rxqs_.empty() && rxqs_.front().queue == 0) stack_.start(now);
  for (size_t i = 0; i < cfg_.services.size(); ++i) {
    const auto& sc = cfg_.services[i];
    std::string why;
    ClientShare share;
    if (config::is_client(sc.kind) && !client_share(i, share)) {
      sample_.services.push_back(nullptr);
      continue;
    }
    auto svc = make_service(sc, cfg_, tcp_, why, share);
    if (!svc) {
      if (core_ == 0)
        std::fprintf(stderr, "wirespeed: service %s: %s\n", sc.name.c_str(), why.c_str());
      sample_.services.push_back(nullptr);
      continue;
    }
    if (!svc->start(stack_, now)) {
      error = "service " + sc.name + ": cannot bind port " + std::to_string(sc.port);
      return false;
    }
    if (!svc->is_client() && sc.family != AddrFamily::kAny) {
      if (sc.protocol == config::Protocol::udp) {
        stack_.udp_restrict_family(sc.port, sc.family);
      } else {
        tcp_.restrict_family(sc.port, sc.family);
      }
    }
    if (svc->is_client()) client_reports_.join(i, core_);
    sample_.services.push_back(svc.get());
    services_.push_back(std::move(svc));
    service_index_.push_back(i);
  }
  for (const auto& sc : cfg_.services) has_servers_ = has_servers_ || !config::is_client(sc.kind);
  sample_.stack = &stack_.counters();
  sample_.drops = &stack_.drops();
  sample_.reassembly = &stack_.reassembly().stats();
  for (const auto& p : ports_)
    sample_.ports.push_back(&stack_.interface_counters(iface_of_port_[p.port_id]));
  for (const auto& p : ports_) sample_.ifaces.push_back(iface_of_port_[p.port_id]);
  sample_.net = &stack_;
  sample_.tcp = &tcp_;
  sample_.steer = &steer_;
  for (auto& io : ios_) io->flush();
  return true;
}

// One iteration: the clock read once (the span since the last read is booked to the
// iteration before), RX, timers, TX, pool housekeeping, reports and stats; an idle
// iteration may end in a sleep (idle_wait), which its span then books as idle.
void Pipeline::run(bool main) {
  constexpr uint16_t kBurst = kMaxRxBurst;
  rte_mbuf* mbufs[kBurst];
  RxSegments segs;
  LoopClock loop;
  loop.stats_every = Duration::millis(cfg_.dataplane.stats_interval_ms);
  loop.next_stats = clock_.now();
  if (auto* m = unmap_guard::attach(core_)) {
    mark_ = m;
    attached_ = true;
  }
  if (adaptive_) prctl(PR_SET_TIMERSLACK, kTimerSlackNs, 0, 0, 0);  // best effort
  warm_heap(size_t{cfg_.dataplane.heap_reserve_mb} << 20);          // this thread's arena
  loop.time.last = clock_.now();
  while (!stop_.load(std::memory_order_relaxed)) {
    // From here to leave() the core may be in a PMD burst: a thread that unmaps memory
    // (memif's disconnect) waits for the end of this iteration.
    mark_->enter();
    const Instant now = clock_.now();
    book_time(now, loop);
    const uint64_t tx_before = stack_.counters().tx_frames;
    const uint32_t got = poll_rx(now, mbufs, kBurst, segs);
    if (got != 0 || now >= loop.deadline) loop.deadline = run_timers(now);
    const bool sent = transmit(now);
    if ((++loop.iter & 255) == 0) pool_housekeeping();
    periodic(now, main, loop);
    mark_->leave();
    // Timers the services' sends armed in the stack (a retransmission or loss probe)
    // come due before the deadline taken when the timers last ran.
    loop.deadline = earliest(loop.deadline, tcp_.next_due());
    // Work is anything received or sent this iteration (a source with nothing to receive
    // still sends: its frames may have gone out in full bursts inside the poll), and a
    // deadline already due: such a core must not sleep.
    loop.time.worked = got != 0 || sent || stack_.counters().tx_frames != tx_before ||
                       loop.deadline <= now || faults_.holding();
    if (loop.time.worked)
      idle_.worked(now);
    else if (adaptive_)
      idle_wait(now, earliest(loop.deadline, loop.next_stats));
  }
}

// Timers: the stack's and every service's; the earliest next deadline.
Instant Pipeline::run_timers(Instant now) {
  Instant deadline = stack_.poll(now);
  for (auto& s : services_) deadline = earliest(deadline, s->poll(now));
  return deadline;
}

// TX: what the stack queued goes to the rings. Frames the rings took count as work;
// frames a ring keeps refusing (a memif with no peer, a link that is down) do not, or
// the core would never sleep.
bool Pipeline::transmit(Instant now) {
  // Turns for the connections held at the TX-pressure mark come first, on the room the
  // last flush made, before the next receive burst clocks more ACKs and data out.
  tcp_.serve_tx_waiters(now);
  stack_.flush(now);
  bool sent = false;
  for (auto& io : ios_) {
    if (io->has_pending()) sent = io->flush() != 0 || sent;
  }
  return sent;
}

// Pool housekeeping, every 256 iterations: a pool running low means no new holds, and
// what TCP holds is copied into its rings so the mbufs go back (rx_holder.hpp).
void Pipeline::pool_housekeeping() {
  bool low = false;
  for (auto& io : ios_) {
    io->refresh_free();
    low = low || io->pool_low();
  }
  holder_.set_low(low);
  if (low && holder_.held_mbufs() != 0) tcp_.release_held();
  if (esp_) esp_housekeeping(*esp_);
}

// Client reports every 50 ms, stats every stats_interval_ms.
void Pipeline::periodic(Instant now, bool main, LoopClock& loop) {
  if (now >= next_reports_) {
    reports(now);
    next_reports_ = now + Duration::millis(50);
  }
  if (now >= loop.next_stats) {
    publish(now, main);
    loop.next_stats = now + loop.stats_every;
  }
}

// The span from the last iteration's clock read to this one's: that iteration's work, or
// its idle poll and the sleep that followed it, so a sleep is never booked as busy to the
// iteration that its wake-up found work in. One clock read serves both the iteration's
// time and this booking.
void Pipeline::book_time(Instant now, LoopClock& loop) {
  ++sample_.loops;
  loop.time.book(now, sample_.busy_ns, sample_.idle_ns);
}

// One received frame into the stack. The caller frees `m` afterwards (TCP may keep
// references to it: rx_holder.hpp).
void Pipeline::receive(rte_mbuf* m, uint16_t iface, uint16_t queue, Instant now, RxSegments& segs) {
  RxMeta meta;
  meta.port = iface;
  meta.queue = queue;
  meta.rss_hash = m->hash.rss;
  meta.ip = decode(m->ol_flags, RTE_MBUF_F_RX_IP_CKSUM_MASK, RTE_MBUF_F_RX_IP_CKSUM_GOOD,
                   RTE_MBUF_F_RX_IP_CKSUM_BAD);
  meta.l4 = decode(m->ol_flags, RTE_MBUF_F_RX_L4_CKSUM_MASK, RTE_MBUF_F_RX_L4_CKSUM_GOOD,
                   RTE_MBUF_F_RX_L4_CKSUM_BAD);
  PacketView frame;
  if (rx_frame(m, segs, stack_.counters(), frame)) {
    frame.set_owner(&holder_, m);
    stack_.receive(frame, meta, now);
  } else {
    stack_.drops().add(DropReason::kRxTooManySegments);
  }
}

// receive(), and when the stack counted a drop of the frame, a copy of it with the reason
// for a capture of drops.
void Pipeline::receive_watched(rte_mbuf* m, uint16_t iface, uint16_t queue, Instant now,
                               RxSegments& segs) {
  const DropCounters& drops = stack_.drops();
  uint64_t before = drops.events;
  receive(m, iface, queue, now, segs);
  if (drops.events != before && is_receive_drop(drops.last)) {
    tap_.drop(m, iface, queue, capture::Direction::kRx, drops.last);
  }
}

// rx_burst on every queue of this core, each frame through the stack, then the frames other
// cores handed over. Returns the number of frames received.
uint32_t Pipeline::poll_rx(Instant now, rte_mbuf** mbufs, uint16_t burst, RxSegments& segs) {
  uint32_t got = 0;
  for (const auto& rq : rxqs_) {
    uint16_t n = rte_eth_rx_burst(rq.port_id, rq.queue, mbufs, burst);
    got += n;
    if (rq.l4_checksums_off) mark_l4_verified(mbufs, n);
    tcp_.rx_burst(n, burst, rq.ring, now);  // behind for long: new SYNs are budgeted
    bool watch = false;
    if (tap_.armed()) [[unlikely]] {
      tap_.rx(mbufs, n, rq.iface, rq.queue);
      watch = tap_.wants(capture::kDrops);
    }
    if (faults_.enabled()) {
      if (n == 0 && !faults_.holding()) continue;
      const auto& out = faults_.filter(mbufs, n, now);
      fault_batch_.assign(out.begin(), out.end());
      deliver(fault_batch_.data(), static_cast<uint16_t>(fault_batch_.size()), rq.queue, watch, now,
              segs);
      continue;
    }
    if (n != 0) deliver(mbufs, n, rq.queue, watch, now, segs);
  }
  if (steer_.enabled()) {
    steer_.flush();
    if (uint32_t r = steer_.refused()) stack_.drops().add(DropReason::kSteerRingFull, r);
    got += take_handed(now, mbufs, burst, segs);
  }
  return got;
}

// A port with l4_checksums: off (memif): its TCP and UDP checksums count as verified, as
// a NIC's RX checksum flags would say; before any steering, so handed-over frames keep it.
void Pipeline::mark_l4_verified(rte_mbuf** mbufs, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) {
    mbufs[i]->ol_flags =
        (mbufs[i]->ol_flags & ~RTE_MBUF_F_RX_L4_CKSUM_MASK) | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
  }
}

// Received frames of one queue into the stack, less those another core owns (handed over
// to it first when the port is steered in software).
void Pipeline::deliver(rte_mbuf** mbufs, uint16_t n, uint16_t queue, bool watch, Instant now,
                       RxSegments& segs) {
  if (steer_.enabled()) n = steer_.sort(mbufs, n);
  receive_all(mbufs, n, queue, watch, now, segs);
}

// Frames into the stack as one receive burst, all freed together at its end (TCP keeps its
// own references): UDP sockets get their datagrams in runs, not one call each.
void Pipeline::receive_all(rte_mbuf** mbufs, uint16_t n, uint16_t queue, bool watch, Instant now,
                           RxSegments& segs) {
  if (n == 0) return;
  // A large connection table (or many TIME-WAIT records): every frame's slot requested
  // first, then each frame's connection (or record) a few frames ahead of its turn
  // (stack/tcp/prefetch.cpp).
  const tcp::TcpStack::PrefetchPlan plan = tcp_.prefetch_plan();
  const bool ahead = plan.any();
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): filled below before it is read
  std::array<tcp::TcpStack::FlowHint, kMaxRxBurst> hints;
  const uint16_t hinted = std::min(n, kMaxRxBurst);
  if (ahead) {
    for (uint16_t i = 0; i < hinted; ++i)
      hints[i] = tcp_.prefetch_frame(first_segment(mbufs[i]), plan);
  }
  stack_.begin_rx_burst();
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = mbufs[i];
    if (ahead && i + kConnAhead < hinted) tcp_.prefetch_conn(hints[i + kConnAhead], plan);
    if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(mbufs[i + 1], void*));
    if (watch) [[unlikely]] {
      receive_watched(m, iface_of_port_[m->port], queue, now, segs);
    } else {
      receive(m, iface_of_port_[m->port], queue, now, segs);
    }
  }
  stack_.end_rx_burst(now);
  rte_pktmbuf_free_bulk(mbufs, n);
}

// Frames of this core's flows that other cores received. The receiving core already
// captured them and applied injected faults.
uint32_t Pipeline::take_handed(Instant now, rte_mbuf** mbufs, uint16_t burst, RxSegments& segs) {
  const uint16_t n = steer_.take(mbufs, burst);
  receive_all(mbufs, n, kHandedOverQueue, tap_.armed() && tap_.wants(capture::kDrops), now, segs);
  return n;
}

void Pipeline::idle_wait(Instant now, Instant next_deadline) {
  const Duration d = idle_.on_empty(now, next_deadline);
  if (d == Duration::zero()) {
    rte_pause();
    return;
  }
  timespec ts{static_cast<time_t>(d.ns() / 1000000000), static_cast<long>(d.ns() % 1000000000)};
  nanosleep(&ts, nullptr);
}

void Pipeline::publish(Instant now, bool main) {
  sample_.now = now;
  metrics_.update_core(core_, sample_);
  if (main) {
    metrics_.update_ports(ports_);
    capture_.watch(now);
  }
}

// Progress lines each second, the final summary line and the JSON report of
// client services. Only here, off the per-packet path, does a core print.
void Pipeline::reports(Instant now) {
  for (size_t i = 0; i < services_.size(); ++i) {
    Service& s = *services_[i];
    if (!s.is_client()) continue;
    const size_t id = service_index_[i];
    ClientReport r;
    if (s.report(now, r)) client_reports_.post(id, core_, r, s.rtt());
    if (!client_reports_.reporter(id, core_)) continue;
    while (client_reports_.merged(id, r)) print_report(s, r);
  }
  // A config with clients and no servers is a job: the data plane stops when
  // every client has reported.
  if (!has_servers_ && client_reports_.all_final()) stop_.store(true);
}

void Pipeline::print_report(const Service& s, const ClientReport& r) {
  char rtt[160] = "";
  if (r.has_rtt) {
    std::snprintf(rtt, sizeof rtt, ", rtt p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f us",
                  r.rtt_ns[0] / 1e3, r.rtt_ns[1] / 1e3, r.rtt_ns[2] / 1e3, r.rtt_ns[3] / 1e3,
                  r.rtt_ns[4] / 1e3);
  }
  std::printf(
      "%s%s: %.1f s, %llu messages, %.3f Gbit/s, %.0f msg/s, %llu connections (%.0f/s)%s%s\n",
      s.name().c_str(), r.final ? ": done" : "", r.seconds,
      static_cast<unsigned long long>(r.messages), r.bits_per_second / 1e9, r.messages_per_second,
      static_cast<unsigned long long>(r.connections), r.connections_per_second, rtt,
      r.errors + r.connect_failures ? (", " + std::to_string(r.errors) + " errors, " +
                                       std::to_string(r.connect_failures) + " failed connects")
                                          .c_str()
                                    : "");
  std::fflush(stdout);
  if (!r.final) return;
  const config::ServiceConfig* sc = nullptr;
  for (const auto& c : cfg_.services) {
    if (c.name == s.name()) sc = &c;
  }
  if (sc == nullptr || sc->report.empty()) return;
  const ClientReportInfo info{s.name(), config::to_string(sc->kind),
                              config::to_string(sc->protocol), sc->message_size};
  if (!write_client_report(sc->report, info, r)) {
    std::fprintf(stderr, "wirespeed: %s: cannot write report %s\n", s.name().c_str(),
                 sc->report.c_str());
  }
}

void Pipeline::finish() {
  mark_->enter();  // the flushes below call tx_burst
  Instant now = clock_.now();
  for (auto& s : services_) s->stop(now);
  // Connections are reset, not left half-open on the peers: a SIGINT/SIGTERM shutdown
  // closes every connection.
  tcp_.shutdown_all(now);
  if (faults_.enabled()) {
    const auto& c = faults_.counters();
    std::printf(
        "wirespeed: core %u: faults injected: %llu lost, %llu duplicated, %llu corrupted, "
        "%llu reordered, %llu delayed, %llu lost on transmit\n",
        core_, static_cast<unsigned long long>(c.lost),
        static_cast<unsigned long long>(c.duplicated), static_cast<unsigned long long>(c.corrupted),
        static_cast<unsigned long long>(c.reordered), static_cast<unsigned long long>(c.delayed),
        static_cast<unsigned long long>(c.tx_lost));
  }
  stack_.poll(now);  // flushes frames held for a burst, too
  for (auto& io : ios_) io->flush();
  metrics_.update_core(core_, sample_);
  mark_->leave();
  if (attached_) unmap_guard::detach(mark_);
  attached_ = false;
}

}  // namespace ws::dp
