#include "dataplane/pipeline.hpp"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <sys/random.h>
#include <time.h>

#include <algorithm>
#include <cstdio>

#include "dataplane/ipsec.hpp"
#include "dataplane/rx_frame.hpp"
#include "dataplane/services.hpp"

namespace ws::dp {

namespace {

// Adaptive idling: after this many empty polls the core starts to sleep, first
// briefly, doubling up to kMaxSleepUs, and never past the stack's next deadline.
constexpr uint32_t kSpinPolls = 2000;
constexpr uint32_t kFirstSleepUs = 5;
constexpr uint32_t kMaxSleepUs = 500;

RxMeta::Cksum decode(uint64_t ol, uint64_t mask, uint64_t good, uint64_t bad) {
  uint64_t v = ol & mask;
  if (v == good) return RxMeta::Cksum::kGood;
  if (v == bad) return RxMeta::Cksum::kBad;
  return RxMeta::Cksum::kUnknown;
}

// The stack's TCP settings from the config, and how this core picks local ports for the
// connections it opens (issue 3, point 6):
// - where the port spreads flows by RSS and its key and table could be read, a local port
//   is fine when the NIC's Toeplitz hash of the returning packets selects an RX queue of
//   this core, so replies arrive where the connection lives;
// - otherwise each core gets its own slice of the ephemeral range, so that connections of
//   different cores never collide in TIME_WAIT.
tcp::TcpConfig tcp_config(const config::Config& cfg, uint32_t core,
                          const std::vector<PortInfo>& ports) {
  const auto& t = cfg.tcp;
  tcp::TcpConfig c;
  c.congestion = t.congestion == config::Congestion::newreno ? tcp::CongestionAlgo::kNewReno
                                                             : tcp::CongestionAlgo::kCubic;
  c.time_wait = Duration::millis(t.time_wait_ms);
  c.time_wait_reuse = Duration::millis(t.time_wait_reuse_ms);
  c.rto_min = Duration::millis(t.rto_min_ms);
  c.rto_initial = Duration::millis(t.rto_initial_ms);
  c.delayed_ack = Duration::millis(t.delayed_ack_ms);
  c.nagle = t.nagle;
  c.keepalive = t.keepalive.enabled;
  c.keepalive_idle = Duration::seconds(t.keepalive.idle_s);
  c.keepalive_interval = Duration::seconds(t.keepalive.interval_s);
  c.keepalive_probes = t.keepalive.probes;
  c.recv_buffer = t.receive_buffer_bytes.value_or(0);
  c.send_buffer = t.send_buffer_bytes.value_or(0);
  c.buffer_max = t.buffer_max_bytes;
  c.syn_backlog = t.syn_backlog;
  c.accept_backlog = t.accept_backlog;
  c.max_connections = t.max_connections;
  c.timestamps = t.timestamps;
  c.sack = t.sack;
  c.window_scaling = t.window_scaling;
  c.mtu_probing = t.mtu_probing;
  c.pmtu_recovery = Duration::seconds(t.pmtu_recovery_s);
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
                              ports[i].rx_queues, ports[i].rss_table});
  }
  RssPortSelector selector(std::move(routes), core, n);
  if (selector.active() && n > 1) {
    c.port_ok = std::move(selector);
    return c;
  }
  uint32_t span = (c.ephemeral_high - c.ephemeral_low + 1) / n;
  c.ephemeral_low = static_cast<uint16_t>(c.ephemeral_low + core * span);
  c.ephemeral_high = static_cast<uint16_t>(c.ephemeral_low + span - 1);
  return c;
}

}  // namespace

Pipeline::Pipeline(uint32_t core_index, const config::Config& cfg,
                   const std::vector<PortInfo>& ports, Metrics& metrics, std::atomic<bool>& stop)
    : core_(core_index),
      cfg_(cfg),
      ports_(ports),
      metrics_(metrics),
      stop_(stop),
      tcp_(stack_, stack_.drops(), tcp_config(cfg, core_index, ports)),
      tcp_transport_(tcp_),
      faults_(cfg.dataplane.faults, core_index),
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
    ic.mtu = p.mtu;
    if (faults_.enabled()) ios_.back()->set_faults(&faults_);
    auto idx = stack_.add_interface(ic, *ios_.back());
    if (iface_of_port_.size() <= p.port_id) iface_of_port_.resize(p.port_id + 1u, 0);
    iface_of_port_[p.port_id] = idx;
    for (uint16_t q = 0; q < p.rx_queues; ++q) {
      if (q % n_cores == core_) rxqs_.push_back(RxQueue{p.port_id, q, idx});
    }
  }
}

Pipeline::~Pipeline() = default;

bool Pipeline::start(std::string& error) {
  Instant now = clock_.now();
  esp_ = make_esp_layer(cfg_, error);
  if (!esp_ && !error.empty()) return false;
  stack_.set_ipsec(esp_.get());
  sample_.esp = esp_.get();
  for (const auto& sc : cfg_.services) {
    std::string why;
    // Clients run once, on the first core: `connections` means connections in
    // all, and one report describes the whole run.
    if (config::is_client(sc.kind) && core_ != 0) {
      sample_.services.push_back(nullptr);
      continue;
    }
    auto svc = make_service(sc, cfg_, tcp_, why);
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
    sample_.services.push_back(svc.get());
    services_.push_back(std::move(svc));
  }
  for (const auto& sc : cfg_.services) has_servers_ = has_servers_ || !config::is_client(sc.kind);
  sample_.stack = &stack_.counters();
  sample_.drops = &stack_.drops();
  sample_.tcp = &tcp_;
  // Only the core that owns RX queue 0 announces: ARP arrives there.
  if (!rxqs_.empty() && rxqs_.front().queue == 0) stack_.start(now);
  for (auto& io : ios_) io->flush();
  return true;
}

void Pipeline::run(bool main) {
  constexpr uint16_t kBurst = 32;
  rte_mbuf* mbufs[kBurst];
  Instant deadline = Instant::from_ns(0);
  Duration stats_every = Duration::millis(cfg_.dataplane.stats_interval_ms);
  Instant next_stats = clock_.now();
  uint64_t last_tsc = rte_rdtsc();
  const double ns_per_cycle = 1e9 / static_cast<double>(clock_.hz());
  uint32_t iter = 0;
  RxSegments segs;
  if (auto* m = unmap_guard::attach(core_)) {
    mark_ = m;
    attached_ = true;
  }

  while (!stop_.load(std::memory_order_relaxed)) {
    // From here to leave() the core may be in a PMD burst: a thread that unmaps memory
    // (memif's disconnect) waits for the end of this iteration.
    mark_->enter();
    Instant now = clock_.now();
    uint32_t got = 0;
    auto process = [&](rte_mbuf* m, uint16_t iface, uint16_t queue) {
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
        frame.set_owner(&holder_, m);  // TCP may keep unread bytes in `m` (rx_holder.hpp)
        stack_.receive(frame, meta, now);
      } else {
        stack_.drops().add(DropReason::kRxTooManySegments);
      }
      rte_pktmbuf_free(m);
    };
    for (const auto& rq : rxqs_) {
      uint16_t n = rte_eth_rx_burst(rq.port_id, rq.queue, mbufs, kBurst);
      got += n;
      if (faults_.enabled()) {
        if (n == 0 && !faults_.holding()) continue;
        for (rte_mbuf* m : faults_.filter(mbufs, n, now))
          process(m, iface_of_port_[m->port], rq.queue);
        continue;
      }
      for (uint16_t i = 0; i < n; ++i) {
        if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(mbufs[i + 1], void*));
        process(mbufs[i], rq.iface, rq.queue);
      }
    }
    if (got != 0 || now >= deadline) {
      deadline = stack_.poll(now);
      for (auto& s : services_) deadline = earliest(deadline, s->poll(now));
    }
    stack_.flush(now);
    bool sent = false;
    for (auto& io : ios_) {
      if (io->has_pending()) {
        io->flush();
        sent = true;
      }
    }
    if ((++iter & 255) == 0) {
      bool low = false;
      for (auto& io : ios_) {
        io->refresh_free();
        low = low || io->pool_low();
      }
      // A pool running low: no new holds, and what TCP holds is copied into its
      // rings so the mbufs go back (rx_holder.hpp).
      holder_.set_low(low);
      if (low && holder_.held_mbufs() != 0) tcp_.release_held();
      if (esp_) esp_housekeeping(*esp_);
    }
    if (now >= next_reports_) {
      reports(now);
      next_reports_ = now + Duration::millis(50);
    }
    if (now >= next_stats) {
      publish(now, main);
      next_stats = now + stats_every;
    }

    mark_->leave();

    uint64_t tsc = rte_rdtsc();
    auto spent = static_cast<uint64_t>(static_cast<double>(tsc - last_tsc) * ns_per_cycle);
    last_tsc = tsc;
    ++sample_.loops;
    if (got != 0 || sent || faults_.holding()) {
      sample_.busy_ns += spent;
      empty_polls_ = 0;
      sleep_us_ = 0;
    } else {
      sample_.idle_ns += spent;
      if (adaptive_) idle_wait(now, earliest(deadline, next_stats));
    }
  }
}

void Pipeline::idle_wait(Instant now, Instant next_deadline) {
  if (++empty_polls_ < kSpinPolls) {
    rte_pause();
    return;
  }
  sleep_us_ = sleep_us_ == 0 ? kFirstSleepUs : std::min(sleep_us_ * 2, kMaxSleepUs);
  int64_t us = sleep_us_;
  if (!next_deadline.is_never() && next_deadline > now) {
    us = std::min<int64_t>(us, (next_deadline - now).us() + 1);
  }
  timespec ts{0, static_cast<long>(us * 1000)};
  nanosleep(&ts, nullptr);
}

void Pipeline::publish(Instant now, bool main) {
  (void)now;
  metrics_.update_core(core_, sample_);
  if (main) metrics_.update_ports(ports_);
}

// Progress lines each second, the final summary line and the JSON report of
// client services. Only here, off the per-packet path, does a core print.
void Pipeline::reports(Instant now) {
  bool any_client = false;
  bool all_done = true;
  for (size_t i = 0; i < services_.size(); ++i) {
    Service& s = *services_[i];
    if (!s.is_client()) continue;
    any_client = true;
    ClientReport r;
    if (s.report(now, r)) print_report(s, r);
    all_done = all_done && s.finished();
  }
  // A config with clients and no servers is a job: the data plane stops when
  // every client has reported.
  if (any_client && all_done && !has_servers_) stop_.store(true);
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
  FILE* f = std::fopen(sc->report.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "wirespeed: %s: cannot write report %s\n", s.name().c_str(),
                 sc->report.c_str());
    return;
  }
  std::fprintf(f,
               "{\"service\": \"%s\", \"kind\": \"%s\", \"protocol\": \"%s\", \"messages\": %llu, "
               "\"bytes\": %llu, \"seconds\": %.6f, \"messages_per_second\": %.3f, "
               "\"bits_per_second\": %.3f, \"message_size\": %u, \"connections\": %llu, "
               "\"connections_per_second\": %.3f, \"connect_failures\": %llu, \"errors\": %llu",
               s.name().c_str(), std::string(config::to_string(sc->kind)).c_str(),
               std::string(config::to_string(sc->protocol)).c_str(),
               static_cast<unsigned long long>(r.messages),
               static_cast<unsigned long long>(r.bytes), r.seconds, r.messages_per_second,
               r.bits_per_second, sc->message_size, static_cast<unsigned long long>(r.connections),
               r.connections_per_second, static_cast<unsigned long long>(r.connect_failures),
               static_cast<unsigned long long>(r.errors));
  if (r.has_rtt) {
    std::fprintf(f,
                 ", \"rtt_us\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"p999\": %.3f, "
                 "\"max\": %.3f}",
                 r.rtt_ns[0] / 1e3, r.rtt_ns[1] / 1e3, r.rtt_ns[2] / 1e3, r.rtt_ns[3] / 1e3,
                 r.rtt_ns[4] / 1e3);
  }
  std::fprintf(f, "}\n");
  std::fclose(f);
}

void Pipeline::finish() {
  mark_->enter();  // the flushes below call tx_burst
  Instant now = clock_.now();
  for (auto& s : services_) s->stop(now);
  // Connections are reset, not left half-open on the peers (CONTRACT: "close
  // connections" on SIGINT/SIGTERM).
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
