#include "stack/ipsec/crypto.hpp"

#include <cstring>

namespace ws::ipsec {

namespace {

constexpr size_t kShaBlock = 64;

bool is_128(Cipher c) { return aes_key_bytes(c) == 16; }

void wipe(uint8_t* p, size_t n) {
  volatile uint8_t* v = p;
  for (size_t i = 0; i < n; ++i) v[i] = 0;
}

// The 12-byte GCM nonce: the SA's salt, then the packet's IV (RFC 4106 section 4).
void make_nonce(const SaKeys& k, const uint8_t iv[8], uint8_t nonce[12]) {
  std::memcpy(nonce, k.salt, kGcmSaltBytes);
  std::memcpy(nonce + kGcmSaltBytes, iv, 8);
}

}  // namespace

CryptoEngine::CryptoEngine() {
  mgr_ = alloc_mb_mgr(0);
  if (mgr_ == nullptr) return;
  init_mb_mgr_auto(mgr_, &arch_);
  narrow_ = mgr_;
  // The SSE manager needs what every wider arch implies (AES-NI, SSE4.2); it uses the SHA
  // extensions when the CPU has them.
  if (arch_ == IMB_ARCH_AVX || arch_ == IMB_ARCH_AVX2 || arch_ == IMB_ARCH_AVX512) {
    narrow_ = alloc_mb_mgr(0);
    if (narrow_ == nullptr) {
      narrow_ = mgr_;
    } else {
      init_mb_mgr_sse(narrow_);
    }
  }
}

CryptoEngine::~CryptoEngine() {
  if (narrow_ != nullptr && narrow_ != mgr_) free_mb_mgr(narrow_);
  if (mgr_ != nullptr) free_mb_mgr(mgr_);
}

std::string_view CryptoEngine::arch() const {
  switch (arch_) {
    case IMB_ARCH_NOAESNI:
      return "no-aesni";
    case IMB_ARCH_SSE:
      return "sse";
    case IMB_ARCH_AVX:
      return "avx";
    case IMB_ARCH_AVX2:
      return "avx2";
    case IMB_ARCH_AVX512:
      return "avx512";
    default:
      return "none";
  }
}

void precompute_hmac(const CryptoEngine& e, std::span<const uint8_t> key, HmacPads& out) {
  alignas(16) uint8_t block[kShaBlock] = {};
  if (key.size() > kShaBlock) {
    IMB_SHA256(e.mgr(), key.data(), key.size(), block);
  } else {
    std::memcpy(block, key.data(), key.size());
  }
  alignas(16) uint8_t pad[kShaBlock];
  for (size_t i = 0; i < kShaBlock; ++i) pad[i] = block[i] ^ 0x36;
  IMB_SHA256_ONE_BLOCK(e.mgr(), pad, out.ipad);
  for (size_t i = 0; i < kShaBlock; ++i) pad[i] = block[i] ^ 0x5c;
  IMB_SHA256_ONE_BLOCK(e.mgr(), pad, out.opad);
  wipe(pad, sizeof pad);
  wipe(block, sizeof block);
}

std::unique_ptr<SaKeys> make_sa_keys(const CryptoEngine& e, Cipher cipher,
                                     std::span<const uint8_t> material) {
  if (material.size() != key_material_bytes(cipher) || !e.ok()) return nullptr;
  auto k = std::make_unique<SaKeys>();
  k->cipher = cipher;
  const size_t aes = aes_key_bytes(cipher);
  if (is_gcm(cipher)) {
    if (is_128(cipher)) {
      IMB_AES128_GCM_PRE(e.mgr(), material.data(), &k->gcm);
    } else {
      IMB_AES256_GCM_PRE(e.mgr(), material.data(), &k->gcm);
    }
    std::memcpy(k->salt, material.data() + aes, kGcmSaltBytes);
  } else {
    if (is_128(cipher)) {
      IMB_AES_KEYEXP_128(e.mgr(), material.data(), k->enc_keys, k->dec_keys);
    } else {
      IMB_AES_KEYEXP_256(e.mgr(), material.data(), k->enc_keys, k->dec_keys);
    }
    precompute_hmac(e, material.subspan(aes, kHmacKeyBytes), k->hmac);
    // The IV key: HMAC-SHA-256(HMAC key, label), first 16 bytes. Unknown to anyone without
    // the SA's keys, so the IVs it makes are unpredictable to them.
    static constexpr char kLabel[] = "wirespeed esp cbc iv key";
    uint8_t derived[32];
    hmac_sha256(e, k->hmac, {reinterpret_cast<const uint8_t*>(kLabel), sizeof kLabel - 1}, derived);
    alignas(16) uint8_t unused_dec[16 * 11];
    IMB_AES_KEYEXP_128(e.mgr(), derived, k->iv_keys, unused_dec);
    wipe(derived, sizeof derived);
    wipe(unused_dec, sizeof unused_dec);
  }
  return k;
}

void gcm_seal(const CryptoEngine& e, const SaKeys& k, const uint8_t iv[8],
              std::span<const uint8_t> aad, Segments data, uint8_t tag[kIcvBytes]) {
  IMB_MGR* m = e.mgr();
  uint8_t nonce[12];
  make_nonce(k, iv, nonce);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): the library's init call fills it
  struct gcm_context_data ctx;
  const bool k128 = is_128(k.cipher);
  if (data.size() == 1) {
    uint8_t* p = data[0].data();
    const uint64_t n = data[0].size();
    if (k128) {
      IMB_AES128_GCM_ENC(m, &k.gcm, &ctx, p, p, n, nonce, aad.data(), aad.size(), tag, kIcvBytes);
    } else {
      IMB_AES256_GCM_ENC(m, &k.gcm, &ctx, p, p, n, nonce, aad.data(), aad.size(), tag, kIcvBytes);
    }
    return;
  }
  if (k128) {
    IMB_AES128_GCM_INIT(m, &k.gcm, &ctx, nonce, aad.data(), aad.size());
    for (auto s : data) IMB_AES128_GCM_ENC_UPDATE(m, &k.gcm, &ctx, s.data(), s.data(), s.size());
    IMB_AES128_GCM_ENC_FINALIZE(m, &k.gcm, &ctx, tag, kIcvBytes);
  } else {
    IMB_AES256_GCM_INIT(m, &k.gcm, &ctx, nonce, aad.data(), aad.size());
    for (auto s : data) IMB_AES256_GCM_ENC_UPDATE(m, &k.gcm, &ctx, s.data(), s.data(), s.size());
    IMB_AES256_GCM_ENC_FINALIZE(m, &k.gcm, &ctx, tag, kIcvBytes);
  }
}

bool gcm_open(const CryptoEngine& e, const SaKeys& k, const uint8_t iv[8],
              std::span<const uint8_t> aad, ConstSegments src, uint8_t* dst,
              const uint8_t tag[kIcvBytes]) {
  IMB_MGR* m = e.mgr();
  uint8_t nonce[12];
  make_nonce(k, iv, nonce);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): the library's init call fills it
  struct gcm_context_data ctx;
  uint8_t computed[kIcvBytes];
  const bool k128 = is_128(k.cipher);
  if (src.size() == 1) {
    const uint8_t* p = src[0].data();
    const uint64_t n = src[0].size();
    if (k128) {
      IMB_AES128_GCM_DEC(m, &k.gcm, &ctx, dst, p, n, nonce, aad.data(), aad.size(), computed,
                         kIcvBytes);
    } else {
      IMB_AES256_GCM_DEC(m, &k.gcm, &ctx, dst, p, n, nonce, aad.data(), aad.size(), computed,
                         kIcvBytes);
    }
  } else if (k128) {
    IMB_AES128_GCM_INIT(m, &k.gcm, &ctx, nonce, aad.data(), aad.size());
    for (auto s : src) {
      IMB_AES128_GCM_DEC_UPDATE(m, &k.gcm, &ctx, dst, s.data(), s.size());
      dst += s.size();
    }
    IMB_AES128_GCM_DEC_FINALIZE(m, &k.gcm, &ctx, computed, kIcvBytes);
  } else {
    IMB_AES256_GCM_INIT(m, &k.gcm, &ctx, nonce, aad.data(), aad.size());
    for (auto s : src) {
      IMB_AES256_GCM_DEC_UPDATE(m, &k.gcm, &ctx, dst, s.data(), s.size());
      dst += s.size();
    }
    IMB_AES256_GCM_DEC_FINALIZE(m, &k.gcm, &ctx, computed, kIcvBytes);
  }
  return constant_time_equal(computed, tag, kIcvBytes);
}

namespace {

void fill_cbc_job(IMB_JOB* job, CbcHmacOp& op, bool seal) {
  const SaKeys& k = *op.keys;
  job->cipher_mode = IMB_CIPHER_CBC;
  job->cipher_direction = seal ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
  job->chain_order = seal ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
  job->enc_keys = k.enc_keys;
  job->dec_keys = k.dec_keys;
  job->key_len_in_bytes = aes_key_bytes(k.cipher);
  job->src = op.buf;
  job->dst = op.buf + op.cipher_offset;
  job->cipher_start_src_offset_in_bytes = op.cipher_offset;
  job->msg_len_to_cipher_in_bytes = op.cipher_len;
  job->iv = op.iv;
  job->iv_len_in_bytes = 16;
  job->hash_alg = IMB_AUTH_HMAC_SHA_256;
  job->hash_start_src_offset_in_bytes = 0;
  job->msg_len_to_hash_in_bytes = op.auth_len;
  job->auth_tag_output = op.tag;
  job->auth_tag_output_len_in_bytes = kIcvBytes;
  job->u.HMAC._hashed_auth_key_xor_ipad = k.hmac.ipad;
  job->u.HMAC._hashed_auth_key_xor_opad = k.hmac.opad;
  job->user_data = &op;
}

void complete(IMB_JOB* job) {
  static_cast<CbcHmacOp*>(job->user_data)->done = job->status == IMB_STATUS_COMPLETED;
}

// The manager may hold jobs back to fill its lanes; completed ones come out in order.
void run_cbc(const CryptoEngine& e, std::span<CbcHmacOp> ops, bool seal) {
  IMB_MGR* m = e.mgr_for(ops.size());
  for (auto& op : ops) {
    op.done = false;
    IMB_JOB* job = IMB_GET_NEXT_JOB(m);
    fill_cbc_job(job, op, seal);
    job = IMB_SUBMIT_JOB(m);
    while (job != nullptr) {
      complete(job);
      job = IMB_GET_COMPLETED_JOB(m);
    }
  }
  while (IMB_JOB* job = IMB_FLUSH_JOB(m)) complete(job);
}

}  // namespace

void cbc_hmac_seal(const CryptoEngine& e, std::span<CbcHmacOp> ops) { run_cbc(e, ops, true); }

void cbc_hmac_open(const CryptoEngine& e, std::span<CbcHmacOp> ops) { run_cbc(e, ops, false); }

bool hmac_sha256(const CryptoEngine& e, const HmacPads& pads, std::span<const uint8_t> data,
                 std::span<uint8_t> out) {
  IMB_MGR* m = e.mgr();
  IMB_JOB* job = IMB_GET_NEXT_JOB(m);
  job->cipher_mode = IMB_CIPHER_NULL;
  job->cipher_direction = IMB_DIR_ENCRYPT;
  job->chain_order = IMB_ORDER_HASH_CIPHER;
  job->src = data.data();
  job->dst = nullptr;
  job->msg_len_to_cipher_in_bytes = 0;
  job->cipher_start_src_offset_in_bytes = 0;
  job->hash_alg = IMB_AUTH_HMAC_SHA_256;
  job->hash_start_src_offset_in_bytes = 0;
  job->msg_len_to_hash_in_bytes = data.size();
  job->auth_tag_output = out.data();
  job->auth_tag_output_len_in_bytes = out.size();
  job->u.HMAC._hashed_auth_key_xor_ipad = pads.ipad;
  job->u.HMAC._hashed_auth_key_xor_opad = pads.opad;
  job->user_data = nullptr;
  bool ok = false;
  job = IMB_SUBMIT_JOB(m);
  for (; job != nullptr; job = IMB_GET_COMPLETED_JOB(m)) ok = job->status == IMB_STATUS_COMPLETED;
  while ((job = IMB_FLUSH_JOB(m)) != nullptr) ok = job->status == IMB_STATUS_COMPLETED;
  return ok;
}

bool constant_time_equal(const uint8_t* a, const uint8_t* b, size_t n) {
  // volatile keeps the compiler from turning the loop into an early-exit memcmp.
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < n; ++i) diff = diff | (a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace ws::ipsec
