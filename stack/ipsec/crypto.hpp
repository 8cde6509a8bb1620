// ESP's ciphers over intel-ipsec-mb: one engine (an IMB_MGR) per lcore, keys expanded once per
// SA, AES-GCM through the direct API and AES-CBC + HMAC-SHA-256 through the job API. Pure
// computation: no clock, no allocation after setup, no system calls.
#pragma once

#include <intel-ipsec-mb.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "stack/ipsec/types.hpp"

namespace ws::ipsec {

// One IMB_MGR, plus a narrow one for small job bursts. Not thread-safe, so each lcore owns
// its own.
class CryptoEngine {
 public:
  CryptoEngine();
  ~CryptoEngine();
  CryptoEngine(const CryptoEngine&) = delete;
  CryptoEngine& operator=(const CryptoEngine&) = delete;

  bool ok() const { return mgr_ != nullptr; }
  IMB_MGR* mgr() const { return mgr_; }
  std::string_view arch() const;  // "sse", "avx", "avx2", "avx512" (what the CPU allowed)

  // Fewer CBC + HMAC jobs than this at once go to the narrow manager. The AVX-512 manager
  // runs HMAC-SHA-256 16 lanes wide and a flush pays for every lane, while the SSE one
  // hashes with the SHA extensions two lanes wide: measured on this CPU (docs/benchmarks.md
  // table 17), the SSE manager is 2.5-4.5x faster for bursts of 1-4 at 1456 and 8976 bytes
  // and the wide one wins from 8 (seal) or 12 (open) on.
  static constexpr size_t kWideBurst = 8;
  // The manager for a burst of `jobs` CBC + HMAC jobs.
  IMB_MGR* mgr_for(size_t jobs) const { return jobs < kWideBurst ? narrow_ : mgr_; }

 private:
  IMB_MGR* mgr_ = nullptr;
  IMB_MGR* narrow_ = nullptr;  // mgr_ itself where the auto-detected arch is already SSE
  IMB_ARCH arch_ = IMB_ARCH_NONE;
};

// HMAC-SHA-256's key, precomputed: the hash states after one block of key ^ ipad and of
// key ^ opad (RFC 2104), which is what the job API takes.
struct alignas(16) HmacPads {
  uint8_t ipad[32];
  uint8_t opad[32];
};

// Any key length (RFC 2104 section 2: a key longer than the block is hashed first).
void precompute_hmac(const CryptoEngine& e, std::span<const uint8_t> key, HmacPads& out);

// One SA's key schedules. Large and 64-byte aligned: allocate with make_sa_keys.
struct alignas(64) SaKeys {
  Cipher cipher = Cipher::aes_gcm_128;
  // GCM: round keys and GHASH key powers; the library needs them aligned (its header aligns
  // the struct on Windows only).
  alignas(64) struct gcm_key_data gcm {};
  uint8_t salt[kGcmSaltBytes] = {};
  alignas(16) uint8_t enc_keys[16 * 15] = {};  // CBC round keys (up to AES-256's 15)
  alignas(16) uint8_t dec_keys[16 * 15] = {};
  HmacPads hmac{};
  // CBC: an AES-128 key, derived from the HMAC key, that turns sequence numbers into IVs.
  alignas(16) uint8_t iv_keys[16 * 11] = {};
};

// Expands `material` (key_material_bytes(cipher) bytes: key || salt, or key || HMAC key).
// nullptr when the length is wrong.
std::unique_ptr<SaKeys> make_sa_keys(const CryptoEngine& e, Cipher cipher,
                                     std::span<const uint8_t> material);

// A packet's bytes, possibly in several segments (the buffers of a chained mbuf).
using Segments = std::span<const std::span<uint8_t>>;

// AES-GCM as ESP uses it (RFC 4106): nonce = salt || iv, 16-byte tag. Encrypts `data` in
// place. One call for one segment; init/update/finalize across several.
void gcm_seal(const CryptoEngine& e, const SaKeys& k, const uint8_t iv[8],
              std::span<const uint8_t> aad, Segments data, uint8_t tag[kIcvBytes]);
// Read-only pieces of a packet (a received chain, unchanged).
using ConstSegments = std::span<const std::span<const uint8_t>>;

// Decrypts the ciphertext held in `src`'s pieces into `dst` (their total length, contiguous;
// `dst` may be the one piece itself, decrypting in place) and checks `tag` in constant time.
// Out of place, a received packet is read once, not copied first. On false `dst` holds
// garbage and must be dropped.
bool gcm_open(const CryptoEngine& e, const SaKeys& k, const uint8_t iv[8],
              std::span<const uint8_t> aad, ConstSegments src, uint8_t* dst,
              const uint8_t tag[kIcvBytes]);

// One AES-CBC + HMAC-SHA-256-128 operation on a contiguous buffer: the cipher runs over
// [cipher_offset, cipher_offset + cipher_len) of `buf` (whole blocks, in place), the HMAC over
// [0, auth_len). Seal encrypts then authenticates into `tag`; open authenticates then
// decrypts, writing the computed tag to `tag`.
struct CbcHmacOp {
  const SaKeys* keys = nullptr;
  uint8_t* buf = nullptr;
  size_t auth_len = 0;
  size_t cipher_offset = 0;
  size_t cipher_len = 0;
  const uint8_t* iv = nullptr;  // 16 bytes
  uint8_t* tag = nullptr;       // kIcvBytes
  bool done = false;            // set when the library completed the job
};

// Submits every op as one chained cipher+hash job, then drains the manager.
void cbc_hmac_seal(const CryptoEngine& e, std::span<CbcHmacOp> ops);
void cbc_hmac_open(const CryptoEngine& e, std::span<CbcHmacOp> ops);

// HMAC-SHA-256 of `data`, truncated to out.size() (16 or 32 bytes), through the job API.
bool hmac_sha256(const CryptoEngine& e, const HmacPads& pads, std::span<const uint8_t> data,
                 std::span<uint8_t> out);

// Equality of two secrets in time independent of where they differ.
bool constant_time_equal(const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace ws::ipsec
