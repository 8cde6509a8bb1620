#include "stack/iface/arp_cache.hpp"

namespace ws {

ArpCache::ArpCache(ArpConfig cfg)
    : cfg_(cfg), table_(cfg.max_entries, cfg.max_pending_per_entry, cfg.max_pending_total) {}

std::optional<MacAddr> ArpCache::lookup(Ipv4Addr ip, Instant now) const {
  const Table::Entry* e = table_.find(ip);
  if (e == nullptr || !resolved(*e) || now >= e->deadline) return std::nullopt;
  return e->mac;
}

Instant ArpCache::quiet_until(Ipv4Addr ip, Instant now) const {
  const Table::Entry* e = table_.find(ip);
  if (e == nullptr || !resolved(*e) || now >= e->deadline) return now;
  if (e->state == State::kPermanent) return Instant::never();
  const auto left = static_cast<int64_t>(cfg_.max_retries) - static_cast<int64_t>(e->probes);
  return left > 0 ? e->deadline - cfg_.retry_interval * left : e->deadline;
}

void ArpCache::refresh(Table::Entry& e, ArpActions& act) {
  ++version_;
  act.send_request(e.ip);
  ++e.probes;
}

void ArpCache::request(Table::Entry& e, Instant now, ArpActions& act) {
  ++version_;
  act.send_request(e.ip);
  ++e.probes;
  e.deadline = now + cfg_.retry_interval;
}

void ArpCache::learn(Ipv4Addr ip, const MacAddr& mac, bool create, Instant now, ArpActions& act) {
  ++version_;
  Table::Entry* e = table_.find(ip);
  if (e != nullptr && e->state == State::kPermanent) return;  // configured: the link cannot move it
  if (e == nullptr) {
    if (!create) return;
    e = table_.allocate(ip, now, act);
    if (e == nullptr) return;
  }
  e->mac = mac;
  e->state = State::kReachable;
  e->probes = 0;
  e->deadline = now + cfg_.reachable_time;
  table_.flush(*e, act);
}

ArpCache::Queued ArpCache::enqueue(Ipv4Addr ip, TxBuf& frame, Instant now, ArpActions& act) {
  ++version_;
  Table::Entry* e = table_.find(ip);
  if (e != nullptr && e->state == State::kPermanent) {
    act.send_resolved(frame, e->mac);
    return Queued::kQueued;
  }
  if (e != nullptr && e->state == State::kReachable) {
    // Expired but still present: resolve again, keeping the entry's slot.
    e->state = State::kIncomplete;
    e->probes = 0;
    e->deadline = now;
  }
  if (e == nullptr) {
    e = table_.allocate(ip, now, act);
    if (e == nullptr) return Queued::kQueueFull;
  }
  if (!table_.hold(*e, frame)) return Queued::kQueueFull;
  if (e->probes == 0 && e->deadline <= now) request(*e, now, act);
  return Queued::kQueued;
}

Instant ArpCache::poll(Instant now, ArpActions& act) {
  ++version_;
  return table_.sweep(now, [&](Table::Entry& e) {
    if (e.state == State::kReachable) {
      table_.release(e, act);  // aged out (RFC 1122 2.3.2.1: entries must time out)
      return false;
    }
    if (e.probes >= cfg_.max_retries) {
      table_.fail(e, act);
      return false;
    }
    request(e, now, act);
    return true;
  });
}

bool ArpCache::add_static(Ipv4Addr ip, const MacAddr& mac, ArpActions& act) {
  ++version_;
  return table_.make_permanent(ip, mac, act);
}

void ArpCache::clear(ArpActions& act) {
  ++version_;
  table_.clear(act);
}

}  // namespace ws
