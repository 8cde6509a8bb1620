#include "stack/ipsec/types.hpp"

#include <cstring>

namespace ws::ipsec {

std::string_view to_string(Direction v) {
  return v == Direction::outbound ? "outbound" : "inbound";
}

std::string_view to_string(Mode v) { return v == Mode::transport ? "transport" : "tunnel"; }

std::string_view to_string(Cipher v) {
  switch (v) {
    case Cipher::aes_gcm_128:
      return "aes-gcm-128";
    case Cipher::aes_gcm_256:
      return "aes-gcm-256";
    case Cipher::aes_cbc_128_hmac_sha256:
      return "aes-cbc-128-hmac-sha256";
    case Cipher::aes_cbc_256_hmac_sha256:
      return "aes-cbc-256-hmac-sha256";
  }
  return "?";
}

namespace {
// A store the compiler may not drop as dead (the object is about to die).
void wipe(uint8_t* p, size_t n) {
  volatile uint8_t* v = p;
  for (size_t i = 0; i < n; ++i) v[i] = 0;
}
}  // namespace

KeyMaterial::KeyMaterial(std::span<const uint8_t> bytes) {
  if (bytes.size() > kMax) return;
  len_ = bytes.size();
  std::memcpy(b_.data(), bytes.data(), len_);
}

KeyMaterial& KeyMaterial::operator=(const KeyMaterial& o) {
  if (this != &o) {
    wipe(b_.data(), kMax);
    len_ = o.len_;
    std::memcpy(b_.data(), o.b_.data(), len_);
  }
  return *this;
}

KeyMaterial::~KeyMaterial() { wipe(b_.data(), kMax); }

}  // namespace ws::ipsec
