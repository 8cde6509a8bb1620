#include "stack/tcp/isn.hpp"

#include <cstring>

namespace ws::tcp {

IsnGenerator::IsnGenerator(const std::array<uint8_t, 32>& secret) {
  std::memcpy(key_.data(), secret.data(), 16);
  std::memcpy(salt_.data(), secret.data() + 16, 16);
}

uint64_t IsnGenerator::hash(Endpoint local, Endpoint remote) const {
  // The second half of the secret rides in the message so that all 32 bytes matter.
  // 28 bytes for IPv4, 52 for IPv6.
  uint8_t m[16 + 36];
  std::memcpy(m, salt_.data(), 16);
  uint8_t* p = m + 16;
  p += local.addr.to_bytes(p);
  p += remote.addr.to_bytes(p);
  *p++ = static_cast<uint8_t>(local.port >> 8);
  *p++ = static_cast<uint8_t>(local.port);
  *p++ = static_cast<uint8_t>(remote.port >> 8);
  *p++ = static_cast<uint8_t>(remote.port);
  return siphash24(key_, m, static_cast<size_t>(p - m));
}

IsnGenerator::Initial IsnGenerator::initial(Endpoint local, Endpoint remote, Instant now) const {
  const uint64_t h = hash(local, remote);
  const auto m = static_cast<uint32_t>(now.ns() / 4000);  // 4 us ticks, RFC 6528 section 3
  return {m + static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
}

uint64_t IsnGenerator::prf(uint64_t x) const {
  // 24 bytes: no message of hash() (28 or 52 bytes) has this length, so none collides.
  uint8_t m[16 + 8];
  std::memcpy(m, salt_.data(), 16);
  std::memcpy(m + 16, &x, 8);
  return siphash24(key_, m, sizeof(m));
}

uint32_t IsnGenerator::isn(Endpoint local, Endpoint remote, Instant now) const {
  return initial(local, remote, now).isn;
}

uint32_t IsnGenerator::ts_offset(Endpoint local, Endpoint remote) const {
  return static_cast<uint32_t>(hash(local, remote) >> 32);
}

}  // namespace ws::tcp
