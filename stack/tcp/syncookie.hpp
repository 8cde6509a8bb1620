// SYN cookies (RFC 4987 section 3.6): when a listener's SYN queue is full, the SYN,ACK's
// sequence number carries what the connection needs, and no state is kept until the
// peer's ACK returns it. The layout follows the idea of Linux and FreeBSD, not their bits:
//
//   ISS = W xor (epoch:2 | mss index:3 | MAC:27)
//
// W whitens the whole word (a keyed hash of the 4-tuple and the peer's ISN under a key
// that never rotates), so the ISS looks random to an observer. The MAC is a keyed hash,
// under the key of the cookie's epoch, of the 4-tuple, the peer's ISN, the epoch, the
// MSS index and the option byte. Keys rotate every kPeriod; a cookie made in the
// previous epoch is still accepted (one rotation), an older one is not.
//
// With timestamps the low six bits of our TSval carry the peer's window scale and SACK
// permission (as Linux does), the ACK's TSecr brings them back, and the MAC covers them:
// a connection accepted by cookie keeps its options. Without timestamps the SYN,ACK
// offers neither window scaling nor SACK (there is nowhere to keep them).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "stack/core/addr.hpp"
#include "stack/core/seqnum.hpp"
#include "stack/core/time.hpp"

namespace ws::tcp {

// The peer's options that a cookie carries.
struct CookieOptions {
  uint32_t mss = 536;             // the peer's MSS, rounded down to a table entry
  bool ts = false;                // timestamps in use: only then the two below
  bool sack = false;              // SACK permitted
  std::optional<uint8_t> wscale;  // the peer's window scale (0..14)
  bool operator==(const CookieOptions&) const = default;
};

// The MSS values a cookie can name (three bits): 536, the common values below the
// port's MSS, and the port's MSS itself, ascending. Derived from the MTU towards the
// peer, so that a peer that can take full-sized segments gets them.
class CookieMssTable {
 public:
  static constexpr size_t kMax = 8;
  explicit CookieMssTable(uint32_t mtu);
  size_t size() const { return n_; }
  uint32_t at(size_t i) const { return v_[i]; }
  // The largest entry not above `peer_mss` (the first entry when all are).
  uint8_t index_for(uint32_t peer_mss) const;

 private:
  std::array<uint32_t, kMax> v_{};
  size_t n_ = 0;
};

class SynCookies {
 public:
  // Lifetime of a key: a cookie lives between one and two periods.
  static constexpr Duration kPeriod = Duration::seconds(64);
  // Low bits of TSval that carry options (RFC 7323 clocks tick in ms: 64 ms of jitter).
  static constexpr uint32_t kTsOptBits = 6;

  explicit SynCookies(const std::array<uint8_t, 32>& secret);

  struct Issued {
    uint32_t iss = 0;
    uint32_t ts_val = 0;  // our TSval for the SYN,ACK (when o.ts)
  };
  // `peer_isn` is the SYN's sequence number, `ts_clock` our timestamp clock for this
  // connection now (its TSvals must not go backwards afterwards), `mtu` the MTU towards
  // the peer. `o.mss` is rounded down to the table.
  Issued make(Endpoint local, Endpoint remote, SeqNum peer_isn, const CookieOptions& o,
              uint32_t mtu, uint32_t ts_clock, Instant now);
  // The ACK that completes the handshake: `iss` = SEG.ACK - 1, `peer_isn` = SEG.SEQ - 1,
  // `ts_ecr` its TSecr when it carries timestamps. Returns the options the SYN carried,
  // or nothing for a forged, damaged or expired cookie. The work done does not depend
  // on the secret or on how close a forgery came: one hash for W, one for the MAC, the
  // key chosen by masking, the checks combined without branches.
  std::optional<CookieOptions> check(Endpoint local, Endpoint remote, SeqNum iss, SeqNum peer_isn,
                                     std::optional<uint32_t> ts_ecr, uint32_t mtu, Instant now);

 private:
  using Key = std::array<uint8_t, 16>;
  void rotate(Instant now);  // derives the keys of the current and previous epoch
  Key epoch_key(uint64_t epoch) const;
  uint32_t whitener(Endpoint local, Endpoint remote, SeqNum peer_isn) const;
  uint32_t mac(const Key& k, Endpoint local, Endpoint remote, SeqNum peer_isn, uint32_t epoch2,
               uint32_t mss_index, uint8_t opt_byte) const;

  Key master_{};  // derives the epoch keys
  Key white_{};   // W's key: fixed, W hides nothing that must expire
  uint64_t epoch_ = ~uint64_t{0};
  Key cur_{};
  Key prev_{};
};

}  // namespace ws::tcp
