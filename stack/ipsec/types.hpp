// The vocabulary of IPsec ESP (RFC 4303) shared by the config reader and the data path:
// directions, modes, ciphers and their sizes, and the secret key material of one SA.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace ws::ipsec {

enum class Direction { outbound, inbound };  // outbound | inbound
enum class Mode { transport, tunnel };       // transport | tunnel
enum class PolicyAction { protect, bypass, discard };
enum class Cipher {
  aes_gcm_128,              // RFC 4106, 16-byte ICV
  aes_gcm_256,              // RFC 4106, 16-byte ICV
  aes_cbc_128_hmac_sha256,  // RFC 3602 + RFC 4868 (HMAC-SHA-256-128)
  aes_cbc_256_hmac_sha256,
};

std::string_view to_string(Direction v);
std::string_view to_string(Mode v);
std::string_view to_string(Cipher v);

constexpr bool is_gcm(Cipher c) { return c == Cipher::aes_gcm_128 || c == Cipher::aes_gcm_256; }

// The AES key length of the cipher, in bytes.
constexpr size_t aes_key_bytes(Cipher c) {
  return (c == Cipher::aes_gcm_128 || c == Cipher::aes_cbc_128_hmac_sha256) ? 16 : 32;
}
constexpr size_t kGcmSaltBytes = 4;   // RFC 4106 section 8.1
constexpr size_t kHmacKeyBytes = 32;  // RFC 4868 section 2.1.1: the key is the hash length
// What a key file holds: GCM key || salt, or CBC key || HMAC key.
constexpr size_t key_material_bytes(Cipher c) {
  return aes_key_bytes(c) + (is_gcm(c) ? kGcmSaltBytes : kHmacKeyBytes);
}

constexpr size_t kIcvBytes = 16;  // every cipher here: GCM's 16-byte tag, HMAC-SHA-256-128
// The IV carried in each packet: GCM's 8 bytes (RFC 4106 section 3.1), CBC's one block.
constexpr size_t iv_bytes(Cipher c) { return is_gcm(c) ? 8 : 16; }
// ESP pads plaintext || pad length || next header to this multiple (RFC 4303 section 2.4):
// GCM is a stream mode and needs only ESP's 4-byte alignment; CBC needs whole AES blocks.
constexpr size_t pad_block(Cipher c) { return is_gcm(c) ? 4 : 16; }

// Key material held in memory: never printed, zeroed when dropped.
class KeyMaterial {
 public:
  static constexpr size_t kMax = 64;
  KeyMaterial() = default;
  // At most kMax bytes; a longer input leaves the key empty (callers check sizes first).
  explicit KeyMaterial(std::span<const uint8_t> bytes);
  KeyMaterial(const KeyMaterial& o) : KeyMaterial(o.bytes()) {}
  KeyMaterial& operator=(const KeyMaterial& o);
  ~KeyMaterial();
  std::span<const uint8_t> bytes() const { return {b_.data(), len_}; }
  size_t size() const { return len_; }
  bool empty() const { return len_ == 0; }

 private:
  std::array<uint8_t, kMax> b_{};
  size_t len_ = 0;
};

}  // namespace ws::ipsec
