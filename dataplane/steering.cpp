#include "dataplane/steering.hpp"

#include <rte_errno.h>

#include <span>

namespace ws::dp {

bool hardware_steered(const PortInfo& p) { return p.rss && p.rss_table.enabled && p.rx_queues > 1; }

// ESP on several cores: everything an SA protects, and the SA's ESP itself, belongs to one
// core, the owner of the outbound SA's two addresses (symmetric, so the peer's data plane
// with the same core count picks the same core). That core alone takes the SA's sequence
// numbers and keeps its replay window; no state is shared between cores. Pinned: the
// protect policy's remote range, and both SAs' outer peers (tunnel mode).
void pin_ipsec(const config::IpsecConfig& c, FlowOwner& owner) {
  auto sa = [&](const std::string& name, ipsec::Direction d) -> const config::SaConfig* {
    for (const auto& s : c.sas) {
      if (s.name == name && s.direction == d) return &s;
    }
    return nullptr;
  };
  for (const auto& p : c.policies) {
    if (p.action != ipsec::PolicyAction::protect) continue;
    const config::SaConfig* out = sa(p.outbound_sa, ipsec::Direction::outbound);
    const config::SaConfig* in = sa(p.inbound_sa, ipsec::Direction::inbound);
    if (out == nullptr || in == nullptr) continue;  // the config check refuses it
    const uint32_t core = sa_owner(*out, owner);
    owner.pin(p.remote, core);
    owner.pin(Ipv4Cidr{out->remote, 32}, core);
    owner.pin(Ipv4Cidr{in->remote, 32}, core);
  }
}

uint32_t sa_owner(const config::SaConfig& sa, const FlowOwner& owner) {
  return flow_hash(sa.local, 0, sa.remote, 0) % owner.cores();
}

bool Steering::init(const config::Config& cfg, const std::vector<PortInfo>& ports,
                    std::string& error) {
  const auto n = static_cast<uint32_t>(cfg.dataplane.lcores.size());
  // iperf3's control and data connections of one test must meet on one core: connections
  // to an iperf3 service are owned by the pair of hosts.
  std::vector<uint16_t> host_ports;
  for (const auto& sc : cfg.services) {
    if (sc.kind == config::ServiceKind::iperf3) host_ports.push_back(sc.port);
  }
  owner_ = FlowOwner(n, std::move(host_ports));
  pin_ipsec(cfg.ipsec, owner_);
  if (n < 2) return true;
  bool any = false;
  for (const auto& p : ports) {
    if (steered_.size() <= p.port_id) steered_.resize(p.port_id + 1u, 0);
    steered_[p.port_id] = hardware_steered(p) ? 0 : 1;
    // A NIC's own RSS would spread one SA's ESP over several cores, each with its own
    // replay window; the pins above bind only ports steered in software.
    if (!cfg.ipsec.sas.empty() && steered_[p.port_id] == 0) {
      error = "port " + p.name +
              ": IPsec with several lcores needs ports steered in software "
              "(this port's RSS spreads ESP by its own hash)";
      return false;
    }
    any = any || steered_[p.port_id] != 0;
  }
  if (!any) return true;
  rings_.assign(size_t{n} * n, nullptr);
  for (uint32_t from = 0; from < n; ++from) {
    for (uint32_t to = 0; to < n; ++to) {
      if (from == to) continue;
      std::string name = "ws_steer_" + std::to_string(from) + "_" + std::to_string(to);
      rte_ring* r =
          rte_ring_create(name.c_str(), kRingSize, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
      if (r == nullptr) {
        error = "steering ring " + name + ": " + rte_strerror(rte_errno);
        shutdown();
        return false;
      }
      rings_[size_t{from} * n + to] = r;
    }
  }
  return true;
}

void Steering::shutdown() {
  for (rte_ring* r : rings_) {
    if (r == nullptr) continue;
    void* m = nullptr;
    while (rte_ring_sc_dequeue(r, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
    rte_ring_free(r);
  }
  rings_.clear();
}

SteerOutbox::SteerOutbox(const Steering& s, uint32_t core)
    : s_(s), core_(core), enabled_(s.active()), staged_(s.cores()) {
  for (auto& v : staged_) v.reserve(size_t{kBurst} * 2);
}

void SteerOutbox::stage(uint32_t to, rte_mbuf* m) {
  staged_[to].push_back(m);
  if (staged_[to].size() == staged_[to].capacity()) flush();
}

uint16_t SteerOutbox::sort(rte_mbuf** mbufs, uint16_t n) {
  uint16_t kept = 0;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = mbufs[i];
    if (!s_.steered(m->port)) {
      mbufs[kept++] = m;
      continue;
    }
    std::span<const uint8_t> head(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
    const uint32_t owner = s_.owner().of_frame(head, core_);
    if (owner == core_) {
      mbufs[kept++] = m;
      continue;
    }
    if (owner == FlowOwner::kEvery) {
      for (uint32_t c = 0; c < s_.cores(); ++c) {
        if (c == core_) continue;
        rte_mbuf* copy = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
        if (copy == nullptr) {
          ++refused_;
        } else {
          stage(c, copy);
        }
      }
      mbufs[kept++] = m;
      continue;
    }
    stage(owner, m);
  }
  return kept;
}

void SteerOutbox::flush() {
  for (uint32_t c = 0; c < staged_.size(); ++c) {
    auto& v = staged_[c];
    if (v.empty()) continue;
    auto** objs = reinterpret_cast<void**>(v.data());
    const auto n = static_cast<unsigned>(v.size());
    const unsigned sent = rte_ring_sp_enqueue_burst(s_.ring(core_, c), objs, n, nullptr);
    out_ += sent;
    for (unsigned i = sent; i < n; ++i) rte_pktmbuf_free(v[i]);
    refused_ += n - sent;
    v.clear();
  }
}

uint16_t SteerOutbox::take(rte_mbuf** out, uint16_t max) {
  uint16_t got = 0;
  const uint32_t n = s_.cores();
  for (uint32_t k = 0; k < n && got < max; ++k) {
    const uint32_t from = (next_from_ + k) % n;
    if (from == core_) continue;
    got += static_cast<uint16_t>(rte_ring_sc_dequeue_burst(
        s_.ring(from, core_), reinterpret_cast<void**>(out + got), max - got, nullptr));
  }
  next_from_ = (next_from_ + 1) % n;
  in_ += got;
  return got;
}

}  // namespace ws::dp
