#include "stack/tcp/isn.hpp"

#include <cstring>

namespace ws::tcp {

namespace {
std::array<uint8_t, 16> first_half(const std::array<uint8_t, 32>& secret) {
  std::array<uint8_t, 16> k{};
  std::memcpy(k.data(), secret.data(), 16);
  return k;
}
}  // namespace

IsnGenerator::IsnGenerator(const std::array<uint8_t, 32>& secret) : salted_(first_half(secret)) {
  salted_.absorb(secret.data() + 16, 16);
}

uint64_t IsnGenerator::hash(Endpoint local, Endpoint remote) const {
  // After the 16-byte salt: 12 bytes for IPv4, 36 for IPv6 (28 and 52 in all).
  uint8_t m[36];
  uint8_t* p = m;
  p += local.addr.to_bytes(p);
  p += remote.addr.to_bytes(p);
  *p++ = static_cast<uint8_t>(local.port >> 8);
  *p++ = static_cast<uint8_t>(local.port);
  *p++ = static_cast<uint8_t>(remote.port >> 8);
  *p++ = static_cast<uint8_t>(remote.port);
  return salted_.finish(m, static_cast<size_t>(p - m));
}

IsnGenerator::Initial IsnGenerator::initial(Endpoint local, Endpoint remote, Instant now) const {
  const uint64_t h = hash(local, remote);
  const auto f = static_cast<uint32_t>(h);
  return {ticks(now) + f, static_cast<uint32_t>(h >> 32), f};
}

uint64_t IsnGenerator::prf(uint64_t x) const {
  // 24 bytes with the salt: no message of hash() (28 or 52 bytes) has this length, so
  // none collides.
  uint8_t m[8];
  std::memcpy(m, &x, 8);
  return salted_.finish(m, sizeof(m));
}

uint32_t IsnGenerator::isn(Endpoint local, Endpoint remote, Instant now) const {
  return initial(local, remote, now).isn;
}

uint32_t IsnGenerator::ts_offset(Endpoint local, Endpoint remote) const {
  return static_cast<uint32_t>(hash(local, remote) >> 32);
}

}  // namespace ws::tcp
