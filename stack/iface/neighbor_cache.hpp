// The IPv6 neighbour cache of one interface on one core (RFC 4861 sections 5.1, 7.2,
// 7.3). Entries move through INCOMPLETE, REACHABLE, STALE, DELAY and PROBE as the RFC
// describes; frames for a neighbour being resolved wait in a bounded queue. Like the
// ARP cache it decides and does not send: solicitations and the frames that waited go
// out through NeighborActions, and time is a parameter.
#pragma once

#include <cstdint>
#include <optional>

#include "stack/core/addr.hpp"
#include "stack/core/packet.hpp"
#include "stack/core/time.hpp"
#include "stack/iface/neighbor_table.hpp"

namespace ws {

// RFC 4861 section 10 constants, with the stale-entry lifetime RFC 4861 7.3.2 leaves
// to the implementation.
struct NeighborConfig {
  Duration reachable_time = Duration::seconds(30);            // REACHABLE_TIME
  Duration retrans_timer = Duration::seconds(1);              // RETRANS_TIMER
  Duration delay_first_probe = Duration::seconds(5);          // DELAY_FIRST_PROBE_TIME
  uint32_t max_multicast_solicit = 3;                         // MAX_MULTICAST_SOLICIT
  uint32_t max_unicast_solicit = 3;                           // MAX_UNICAST_SOLICIT
  uint32_t max_rtr_solicitations = 3;                         // MAX_RTR_SOLICITATIONS
  Duration rtr_solicitation_interval = Duration::seconds(4);  // RTR_SOLICITATION_INTERVAL
  Duration stale_lifetime = Duration::seconds(600);           // unused STALE entries are freed
  uint32_t max_entries = 1024;
  uint32_t max_pending_per_entry = 16;
  uint32_t max_pending_total = 512;
};

// send_resolved and drop_pending come from PendingSink.
class NeighborActions : public PendingSink {
 public:
  // A neighbour solicitation for `target`: to its solicited-node multicast address when
  // `unicast` is empty (INCOMPLETE), else to that link address (PROBE, RFC 4861 7.3.3).
  virtual void send_solicit(const Ipv6Addr& target, const std::optional<MacAddr>& unicast) = 0;
};

class NeighborCache {
 public:
  // kPermanent: a configured neighbour, outside RFC 4861's state machine (no NUD).
  enum class State : uint8_t { kFree, kIncomplete, kReachable, kStale, kDelay, kProbe, kPermanent };

  explicit NeighborCache(NeighborConfig cfg = {});
  NeighborCache(const NeighborCache&) = delete;
  NeighborCache& operator=(const NeighborCache&) = delete;

  // The link address to send to `ip` now, moving the entry as sending does (RFC 4861
  // 7.3.3: REACHABLE past its time becomes STALE; sending to STALE starts DELAY).
  // Nothing when the neighbour is unknown or INCOMPLETE: enqueue() then.
  std::optional<MacAddr> resolve(const Ipv6Addr& ip, Instant now);

  enum class Queued : uint8_t { kQueued, kQueueFull };
  // Holds `frame` until `ip` resolves; solicits at once for a new entry.
  Queued enqueue(const Ipv6Addr& ip, TxBuf& frame, Instant now, NeighborActions& act);

  // A neighbour advertisement for `ip` (RFC 4861 7.2.5), with its flags and target
  // link-layer address option. Returns false when there was no entry (it is ignored).
  bool advertised(const Ipv6Addr& ip, const std::optional<MacAddr>& tll, bool solicited,
                  bool override_flag, Instant now, NeighborActions& act);
  // A solicitation (or router solicitation / advertisement) from `ip` carrying its link
  // address (RFC 4861 7.2.3): creates or updates a STALE entry.
  void solicited_by(const Ipv6Addr& ip, const MacAddr& sll, Instant now, NeighborActions& act);
  // A configured neighbour: ip is at mac for as long as the cache lives; advertisements
  // and solicitations do not change it, and it is never probed. False when no slot is left.
  bool add_static(const Ipv6Addr& ip, const MacAddr& mac, NeighborActions& act);
  // Upper-layer reachability confirmation (RFC 4861 7.3.1): an entry becomes REACHABLE.
  void confirm(const Ipv6Addr& ip, Instant now);

  // Retransmissions, state changes by time, expiry; returns the next deadline.
  Instant poll(Instant now, NeighborActions& act);
  void clear(NeighborActions& act);

  std::optional<State> state_of(const Ipv6Addr& ip) const;
  // Counts every change to any entry (state, link address, created or freed): a link address
  // kept from resolve() (tx_path_cache.hpp) holds while this is unchanged.
  uint64_t version() const { return version_; }
  // Until when resolve(ip) returns the same address and moves nothing: the entry's deadline
  // in REACHABLE, DELAY and PROBE; `now` (already over) otherwise.
  Instant quiet_until(const Ipv6Addr& ip, Instant now) const;
  size_t size() const { return table_.live(); }
  uint64_t resolve_failures() const { return table_.failures(); }

 private:
  // An entry's deadline is its state's timer (see poll).
  using Table = NeighborTable<Ipv6Addr, State>;
  using Entry = Table::Entry;

  void set(Entry& e, State s, Instant deadline);
  // The due-timer step of poll(); false when it freed e.
  bool expire(Entry& e, Instant now, NeighborActions& act);

  NeighborConfig cfg_;
  Table table_;
  uint64_t version_ = 0;
};

}  // namespace ws
