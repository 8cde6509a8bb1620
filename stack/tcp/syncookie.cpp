#include "stack/tcp/syncookie.hpp"

#include <cstring>

#include "stack/tcp/isn.hpp"
#include "stack/tcp/mss.hpp"

namespace ws::tcp {

namespace {

constexpr uint32_t kMacBits = 27;
constexpr uint32_t kMacMask = (1u << kMacBits) - 1;
constexpr uint32_t kTsOptMask = (1u << SynCookies::kTsOptBits) - 1;
constexpr uint32_t kTsMarker = 1u << 5;  // set in every option field we issue
constexpr uint8_t kNoWscale = 15;

// Branch-free comparisons of small values (below 2^31): 1 or 0.
constexpr uint32_t ct_eq(uint32_t a, uint32_t b) { return ((a ^ b) - 1) >> 31; }
constexpr uint32_t ct_lt(uint32_t a, uint32_t b) { return (a - b) >> 31; }

uint8_t* put_be32(uint8_t* p, uint32_t v) {
  for (int i = 3; i >= 0; --i) *p++ = static_cast<uint8_t>(v >> (8 * i));
  return p;
}
uint8_t* put_be16(uint8_t* p, uint16_t v) {
  *p++ = static_cast<uint8_t>(v >> 8);
  *p++ = static_cast<uint8_t>(v);
  return p;
}
// The 4-tuple and the peer's ISN: 16 bytes (40 over IPv6), the common head of both
// hashes' messages.
uint8_t* put_flow(uint8_t* p, Endpoint local, Endpoint remote, SeqNum peer_isn) {
  p += local.addr.to_bytes(p);
  p = put_be16(p, local.port);
  p += remote.addr.to_bytes(p);
  p = put_be16(p, remote.port);
  return put_be32(p, peer_isn.raw());
}

// TSval option field: marker, SACK, window scale (15: none).
uint32_t ts_field(const CookieOptions& o) {
  return kTsMarker | (o.sack ? 1u << 4 : 0u) | (o.wscale ? *o.wscale : kNoWscale);
}

}  // namespace

CookieMssTable::CookieMssTable(uint32_t mtu) {
  // 536: RFC 9293 3.7.1's default; the rest are the sizes common behind tunnels, PPPoE and
  // Ethernet, and jumbo frames. The port's own MSS tops the table.
  constexpr uint32_t kCommon[] = {1220, 1360, 1400, 1440, 1460, 8960};
  const uint32_t top = advertised_mss(mtu);
  v_[n_++] = kDefaultPeerMss;
  for (uint32_t c : kCommon)
    if (c > kDefaultPeerMss && c < top) v_[n_++] = c;
  if (top > kDefaultPeerMss) v_[n_++] = top;
}

uint8_t CookieMssTable::index_for(uint32_t peer_mss) const {
  // A peer below 536 gets 536, as in Linux: every host takes 576-byte datagrams.
  uint8_t i = 0;
  for (size_t k = 1; k < n_; ++k)
    if (v_[k] <= peer_mss) i = static_cast<uint8_t>(k);
  return i;
}

SynCookies::SynCookies(const std::array<uint8_t, 32>& secret) {
  // Two keys of our own from the stack's secret (labelled so that no message collides with
  // the ISN generator's): the epoch keys' master and W's key.
  Key k{};
  std::memcpy(k.data(), secret.data(), 16);
  uint8_t m[24];
  constexpr uint8_t kLabel[8] = {'s', 'y', 'n', 'c', 'o', 'o', 'k', 'i'};
  std::memcpy(m, kLabel, sizeof kLabel);
  std::memcpy(m + 8, secret.data() + 16, 16);
  for (uint8_t i = 0; i < 4; ++i) {
    m[7] = static_cast<uint8_t>('0' + i);
    uint64_t h = siphash24(k, m, sizeof(m));
    std::memcpy((i < 2 ? master_.data() : white_.data()) + size_t{8} * (i % 2), &h, 8);
  }
}

SynCookies::Key SynCookies::epoch_key(uint64_t epoch) const {
  Key out{};
  uint8_t m[9];
  std::memcpy(m, &epoch, 8);
  for (uint8_t i = 0; i < 2; ++i) {
    m[8] = i;
    uint64_t h = siphash24(master_, m, sizeof(m));
    std::memcpy(out.data() + size_t{8} * i, &h, 8);
  }
  return out;
}

void SynCookies::rotate(Instant now) {
  const uint64_t e = now.ns() / static_cast<uint64_t>(kPeriod.ns());
  if (e == epoch_) return;
  prev_ = e == epoch_ + 1 ? cur_ : epoch_key(e - 1);
  cur_ = epoch_key(e);
  epoch_ = e;
}

uint32_t SynCookies::whitener(Endpoint local, Endpoint remote, SeqNum peer_isn) const {
  uint8_t m[40];
  const uint8_t* end = put_flow(m, local, remote, peer_isn);
  return static_cast<uint32_t>(siphash24(white_, m, static_cast<size_t>(end - m)));
}

uint32_t SynCookies::mac(const Key& k, Endpoint local, Endpoint remote, SeqNum peer_isn,
                         uint32_t epoch2, uint32_t mss_index, uint8_t opt_byte) const {
  uint8_t m[43];
  uint8_t* p = put_flow(m, local, remote, peer_isn);
  *p++ = static_cast<uint8_t>(epoch2);
  *p++ = static_cast<uint8_t>(mss_index);
  *p++ = opt_byte;
  return static_cast<uint32_t>(siphash24(k, m, static_cast<size_t>(p - m))) & kMacMask;
}

SynCookies::Issued SynCookies::make(Endpoint local, Endpoint remote, SeqNum peer_isn,
                                    const CookieOptions& o, uint32_t mtu, uint32_t ts_clock,
                                    Instant now) {
  rotate(now);
  const uint32_t idx = CookieMssTable(mtu).index_for(o.mss);
  Issued out;
  uint8_t opt_byte = 0;
  if (o.ts) {
    opt_byte = static_cast<uint8_t>(ts_field(o));
    // Our TSvals must not go backwards: the field replaces the clock's low bits, one
    // step of 64 lower when that would put it ahead of the clock.
    uint32_t ts = (ts_clock & ~kTsOptMask) | opt_byte;
    if (static_cast<int32_t>(ts - ts_clock) > 0) ts -= kTsOptMask + 1;
    out.ts_val = ts;
  }
  const auto e2 = static_cast<uint32_t>(epoch_ & 3);
  const uint32_t x =
      e2 << 30 | idx << kMacBits | mac(cur_, local, remote, peer_isn, e2, idx, opt_byte);
  out.iss = x ^ whitener(local, remote, peer_isn);
  return out;
}

std::optional<CookieOptions> SynCookies::check(Endpoint local, Endpoint remote, SeqNum iss,
                                               SeqNum peer_isn, std::optional<uint32_t> ts_ecr,
                                               uint32_t mtu, Instant now) {
  rotate(now);
  const uint32_t x = iss.raw() ^ whitener(local, remote, peer_isn);
  const uint32_t e2 = x >> 30, idx = (x >> kMacBits) & 7;
  const auto cur2 = static_cast<uint32_t>(epoch_ & 3), prev2 = (cur2 - 1) & 3;
  // The epoch's key, chosen by mask: which one it is depends on W.
  const uint32_t is_cur = ct_eq(e2, cur2);
  const auto sel = static_cast<uint8_t>(0u - is_cur);
  Key k;
  for (size_t i = 0; i < k.size(); ++i)
    k[i] = static_cast<uint8_t>((cur_[i] & sel) | (prev_[i] & static_cast<uint8_t>(~sel)));
  const uint32_t field = ts_ecr ? (*ts_ecr & kTsOptMask) : 0;
  const uint32_t m = mac(k, local, remote, peer_isn, e2, idx, static_cast<uint8_t>(field));
  const CookieMssTable table(mtu);
  const uint32_t ws = field & 15;
  uint32_t ok = (is_cur | ct_eq(e2, prev2)) & ct_eq(m, x & kMacMask) &
                ct_lt(idx, static_cast<uint32_t>(table.size()));
  // With timestamps the field must be one we issue: marker set, a scale of 0..14 or none.
  if (ts_ecr) ok &= ct_eq(field & kTsMarker, kTsMarker) & (ct_lt(ws, 15) | ct_eq(ws, kNoWscale));
  if (!ok) return std::nullopt;
  CookieOptions o;
  o.mss = table.at(idx);
  o.ts = ts_ecr.has_value();
  if (o.ts) {
    o.sack = (field >> 4) & 1;
    if (ws != kNoWscale) o.wscale = static_cast<uint8_t>(ws);
  }
  return o;
}

}  // namespace ws::tcp
