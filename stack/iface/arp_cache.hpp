// The ARP neighbour cache of one interface on one core (RFC 826, RFC 1122 section
// 2.3.2). It decides; it does not send: poll() and the other entry points report
// what to transmit through ArpActions, so the timing is testable on a virtual clock.
#pragma once

#include <cstdint>
#include <optional>

#include "stack/core/addr.hpp"
#include "stack/core/packet.hpp"
#include "stack/core/time.hpp"
#include "stack/iface/neighbor_table.hpp"

namespace ws {

struct ArpConfig {
  Duration reachable_time = Duration::seconds(60);  // a learned entry's life
  Duration retry_interval = Duration::seconds(1);   // between unanswered requests
  uint32_t max_retries = 3;                         // requests before giving up
  uint32_t max_entries = 1024;
  uint32_t max_pending_per_entry = 16;  // RFC 1122 2.3.2.2 asks for at least one
  uint32_t max_pending_total = 512;
};

// send_resolved and drop_pending come from PendingSink.
class ArpActions : public PendingSink {
 public:
  virtual void send_request(Ipv4Addr target) = 0;
};

class ArpCache {
 public:
  explicit ArpCache(ArpConfig cfg = {});
  ArpCache(const ArpCache&) = delete;
  ArpCache& operator=(const ArpCache&) = delete;

  // The MAC for ip if a live entry exists.
  std::optional<MacAddr> lookup(Ipv4Addr ip, Instant now) const;
  // lookup() for a frame about to be sent, which also keeps the entry fresh: in the last
  // max_retries x retry_interval of its life an entry in use sends a request each
  // retry_interval while its MAC stays in use, and the reply (learn) renews it. A
  // neighbour in steady use then never expires, and its frames never queue behind a new
  // resolution (a burst larger than the pending queue would be dropped); one that stops
  // answering still expires on time (RFC 1122 2.3.2.1, the "unicast poll" of Linux's
  // PROBE state, sent as a broadcast request here).
  // Inline: every frame sent asks it (tests/bench/echo_cost, http_cost); the refresh
  // request, once per retry interval at most, is out of line.
  std::optional<MacAddr> lookup_for_send(Ipv4Addr ip, Instant now, ArpActions& act) {
    Table::Entry* e = table_.find(ip);
    if (e == nullptr || !resolved(*e) || now >= e->deadline) return std::nullopt;
    // Refresh k (0-based) is due (max_retries - k) retry intervals before the deadline; a
    // permanent entry's deadline is never, so it is never refreshed.
    const auto left = static_cast<int64_t>(cfg_.max_retries) - static_cast<int64_t>(e->probes);
    if (left > 0 && now >= e->deadline - cfg_.retry_interval * left) refresh(*e, act);
    return e->mac;
  }

  // Records ip -> mac (from a reply, or from a request addressed to us: RFC 826
  // "merge" step) and sends the frames that waited for it. `create` says whether
  // to add a new entry or only refresh an existing one.
  void learn(Ipv4Addr ip, const MacAddr& mac, bool create, Instant now, ArpActions& act);

  enum class Queued : uint8_t { kQueued, kQueueFull };
  // Holds `frame` until ip resolves; sends the first request at once.
  Queued enqueue(Ipv4Addr ip, TxBuf& frame, Instant now, ArpActions& act);

  // Retries and expiries; returns the next deadline.
  Instant poll(Instant now, ArpActions& act);

  // A configured neighbour: ip is at mac for as long as the cache lives; ARP replies and
  // requests do not change it. False when every slot is taken by another permanent entry
  // or a resolution in progress.
  bool add_static(Ipv4Addr ip, const MacAddr& mac, ArpActions& act);

  // Forgets every entry, handing queued frames to act.drop_pending (teardown).
  void clear(ArpActions& act);

  // Counts every change to any entry (learned, expired, queued for, evicted, a request sent):
  // a MAC address kept from lookup_for_send() (tx_path_cache.hpp) holds while it is unchanged.
  uint64_t version() const { return version_; }
  // Until when lookup_for_send(ip) returns the same MAC without sending a refresh: the
  // entry's next refresh point, or its expiry; `now` (already over) when it is not reachable.
  Instant quiet_until(Ipv4Addr ip, Instant now) const;

  size_t size() const { return table_.live(); }
  uint64_t resolve_failures() const { return table_.failures(); }

 private:
  // An entry's deadline is its expiry when reachable, its next retry when incomplete,
  // never when permanent (so poll() never reaches one); its probe count is the number of
  // requests sent.
  enum class State : uint8_t { kFree, kIncomplete, kReachable, kPermanent };
  using Table = NeighborTable<Ipv4Addr, State>;

  static bool resolved(const Table::Entry& e) {
    return e.state == State::kReachable || e.state == State::kPermanent;
  }

  // lookup_for_send's refresh request for a reachable entry (its deadline unchanged).
  void refresh(Table::Entry& e, ArpActions& act);
  // Sends a request for e now and sets its retry time.
  void request(Table::Entry& e, Instant now, ArpActions& act);

  ArpConfig cfg_;
  Table table_;
  uint64_t version_ = 0;
};

}  // namespace ws
