// Raw ESP crypto on this CPU, through our wrappers (stack/ipsec): GB/s per core and cycles
// per packet at 64, 1500 and 9000 bytes for every cipher; AES-GCM through ipsec-mb's direct
// API (what the data path uses) against its job API; OpenSSL's EVP AES-GCM, what a user would
// otherwise use; and the cost of ipsec-mb 1.3 writing one global error variable in every
// call: the same GCM loop on one core, then on two cores at once (each with its own IMB_MGR).
//
//   build/tests/bench/ipsec_crypto_bench [seconds per row, default 0.3]
#include <openssl/evp.h>
#include <pthread.h>
#include <x86intrin.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "stack/core/checksum.hpp"
#include "stack/ipsec/esp.hpp"

namespace {

using namespace ws::ipsec;
using Clock = std::chrono::steady_clock;

double g_seconds = 0.3;

struct Result {
  double gbps = 0;    // payload gigabytes per second
  double cycles = 0;  // TSC cycles per packet
  double mpps = 0;
};

// Runs `op` until g_seconds pass (checked every 256 calls).
template <typename Op>
Result measure(uint32_t bytes, Op&& op) {
  for (int i = 0; i < 1000; ++i) op();  // warm up
  uint64_t n = 0;
  const auto t0 = Clock::now();
  const uint64_t c0 = __rdtsc();
  const auto until = t0 + std::chrono::duration<double>(g_seconds);
  while (true) {
    for (int i = 0; i < 256; ++i) op();
    n += 256;
    if (Clock::now() >= until) break;
  }
  const uint64_t c1 = __rdtsc();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return {static_cast<double>(n) * bytes / s / 1e9, static_cast<double>(c1 - c0) / n, n / s / 1e6};
}

std::vector<uint8_t> material(Cipher c) {
  std::vector<uint8_t> m(key_material_bytes(c));
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(i * 7 + 1);
  return m;
}

// NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): the library's init call fills it
struct gcm_context_data& gcm_ctx() {
  static thread_local struct gcm_context_data ctx;
  return ctx;
}

Result esp_seal_loop(const CryptoEngine& e, Cipher c, uint32_t size) {
  auto keys = make_sa_keys(e, c, material(c));
  std::vector<uint8_t> buf(esp_len(c, size) + 64);
  uint64_t seq = 1;
  return measure(size,
                 [&] { esp_seal(e, *keys, 0x1001, EspSeq(seq++), false, 17, buf.data(), size); });
}

// GCM through the job API: one job per packet, submitted in bursts of 32, then flushed.
Result gcm_job_loop(const CryptoEngine& e, Cipher c, uint32_t size) {
  auto keys = make_sa_keys(e, c, material(c));
  constexpr int kBurst = 32;
  std::vector<std::vector<uint8_t>> bufs(kBurst, std::vector<uint8_t>(size + 16));
  uint8_t iv[12] = {1, 2, 3, 4};
  uint8_t aad[8] = {};
  IMB_MGR* m = e.mgr();
  Result r = measure(size * kBurst, [&] {
    for (int i = 0; i < kBurst; ++i) {
      IMB_JOB* j = IMB_GET_NEXT_JOB(m);
      j->cipher_mode = IMB_CIPHER_GCM;
      j->hash_alg = IMB_AUTH_AES_GMAC;
      j->cipher_direction = IMB_DIR_ENCRYPT;
      j->chain_order = IMB_ORDER_CIPHER_HASH;
      j->key_len_in_bytes = aes_key_bytes(c);
      j->enc_keys = &keys->gcm;
      j->dec_keys = &keys->gcm;
      j->src = bufs[i].data();
      j->dst = bufs[i].data();
      j->cipher_start_src_offset_in_bytes = 0;
      j->msg_len_to_cipher_in_bytes = size;
      j->hash_start_src_offset_in_bytes = 0;
      j->msg_len_to_hash_in_bytes = size;
      j->iv = iv;
      j->iv_len_in_bytes = 12;
      j->u.GCM.aad = aad;
      j->u.GCM.aad_len_in_bytes = 8;
      j->auth_tag_output = bufs[i].data() + size;
      j->auth_tag_output_len_in_bytes = 16;
      j = IMB_SUBMIT_JOB(m);
      while (j != nullptr) j = IMB_GET_COMPLETED_JOB(m);
    }
    while (IMB_FLUSH_JOB(m) != nullptr) {
    }
  });
  r.cycles /= kBurst;
  r.mpps *= kBurst;
  return r;
}

Result openssl_gcm_loop(Cipher c, uint32_t size) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  auto key = material(c);
  EVP_EncryptInit_ex(ctx, aes_key_bytes(c) == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), nullptr,
                     key.data(), nullptr);
  std::vector<uint8_t> buf(size + 16);
  uint8_t iv[12] = {1, 2, 3, 4};
  uint8_t aad[8] = {};
  uint8_t tag[16];
  uint64_t seq = 0;
  Result r = measure(size, [&] {
    std::memcpy(iv + 4, &++seq, 8);
    int len = 0;
    EVP_EncryptInit_ex(ctx, nullptr, nullptr, nullptr, iv);
    EVP_EncryptUpdate(ctx, nullptr, &len, aad, sizeof aad);
    EVP_EncryptUpdate(ctx, buf.data(), &len, buf.data(), static_cast<int>(size));
    EVP_EncryptFinal_ex(ctx, buf.data() + len, &len);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag);
  });
  EVP_CIPHER_CTX_free(ctx);
  return r;
}

// CBC + HMAC as the job API wants it: `burst` packets per call, one chained job each (the
// engine picks its narrow manager below CryptoEngine::kWideBurst).
Result cbc_burst_loop(const CryptoEngine& e, Cipher c, uint32_t size, int burst = 32) {
  auto keys = make_sa_keys(e, c, material(c));
  const uint32_t ct = round_up(size + 2, 16);
  std::vector<std::vector<uint8_t>> bufs(burst, std::vector<uint8_t>(24 + ct + 16));
  std::vector<CbcHmacOp> ops(burst);
  for (int i = 0; i < burst; ++i) {
    ops[i] = {keys.get(),         bufs[i].data(),          24 + ct, 24, ct,
              bufs[i].data() + 8, bufs[i].data() + 24 + ct};
  }
  Result r = measure(size * burst, [&] { cbc_hmac_seal(e, ops); });
  r.cycles /= burst;
  r.mpps *= burst;
  return r;
}

// What fusing the send-ring copy with encryption could save, per packet of `size` bytes of
// TCP payload already in cache (a ring holding data just written): today the payload is
// copied into the frame with its checksum summed on the way (csum_copy), then sealed in
// place; fused, the checksum would be a read pass over the ring and GCM would encrypt from
// the ring into the frame (its out-of-place API). `fused` selects the second.
Result copy_then_seal_loop(const CryptoEngine& e, uint32_t size, bool fused) {
  auto keys = make_sa_keys(e, Cipher::aes_gcm_128, material(Cipher::aes_gcm_128));
  std::vector<uint8_t> ring(size);
  for (size_t i = 0; i < ring.size(); ++i) ring[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> frame(size + 64);
  uint8_t iv[8] = {};
  uint8_t aad[8] = {};
  uint8_t tag[16];
  volatile uint32_t sink = 0;
  uint64_t seq = 0;
  IMB_MGR* m = e.mgr();
  uint8_t nonce[12] = {};
  return measure(size, [&] {
    std::memcpy(iv, &++seq, 8);
    if (fused) {
      sink = ws::csum_partial(ring);
      std::memcpy(nonce + 4, iv, 8);
      IMB_AES128_GCM_ENC(m, &keys->gcm, &gcm_ctx(), frame.data(), ring.data(), size, nonce, aad, 8,
                         tag, 16);
    } else {
      sink = ws::csum_copy(frame.data(), ring);
      std::span<uint8_t> seg(frame.data(), size);
      gcm_seal(e, *keys, iv, {aad, 8}, std::span(&seg, 1), tag);
    }
  });
}

// One pass over `size` bytes already in cache, in TSC cycles per byte: what each step of the
// send and receive paths costs on its own, to set against a plaintext path's budget.
void print_passes(const CryptoEngine& e, uint32_t size) {
  auto keys = make_sa_keys(e, Cipher::aes_gcm_128, material(Cipher::aes_gcm_128));
  std::vector<uint8_t> a(size + 64, 1), b(size + 64, 2);
  volatile uint32_t sink = 0;
  uint8_t iv[8] = {};
  uint8_t aad[8] = {};
  uint8_t tag[16] = {};
  const std::span<const uint8_t> piece(a.data(), size);
  uint64_t seq = 1;
  struct Row {
    const char* what;
    Result r;
  } rows[] = {
      {"memcpy", measure(size, [&] { std::memcpy(b.data(), a.data(), size); })},
      {"csum_partial (checksum, read only)",
       measure(size, [&] { sink = ws::csum_partial(piece); })},
      {"csum_copy (copy + checksum)",
       measure(size, [&] { sink = ws::csum_copy(b.data(), piece); })},
      {"esp_seal GCM-128 in place",
       measure(size, [&] { esp_seal(e, *keys, 1, EspSeq(seq++), false, 6, a.data(), size); })},
      {"gcm_open GCM-128 out of place (tag fails)",
       measure(size,
               [&] {
                 sink = gcm_open(e, *keys, iv, {aad, 8}, std::span(&piece, 1), b.data(), tag);
               })},
  };
  for (const Row& row : rows) {
    std::printf("%-44s %6u %9.2f %11.0f %9.3f\n", row.what, size, row.r.gbps, row.r.cycles,
                row.r.cycles / size);
  }
}

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// Mpps of each of `threads` threads running esp_seal with GCM-128 (or, as a control without
// a shared global, OpenSSL's GCM) at `size` at the same time.
std::vector<double> concurrent_gcm(int threads, uint32_t size, bool openssl = false) {
  std::vector<double> mpps(threads);
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      pin(t);
      CryptoEngine e;
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      mpps[t] = openssl ? openssl_gcm_loop(Cipher::aes_gcm_128, size).mpps
                        : esp_seal_loop(e, Cipher::aes_gcm_128, size).mpps;
    });
  }
  for (auto& t : ts) t.join();
  return mpps;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_seconds = std::atof(argv[1]);
  pin(0);
  CryptoEngine e;
  if (!e.ok()) return 1;
  std::printf("intel-ipsec-mb %s, %.*s code path; %.2f s per row\n\n", IMB_VERSION_STR,
              static_cast<int>(e.arch().size()), e.arch().data(), g_seconds);
  const uint32_t sizes[] = {64, 1500, 9000};
  const Cipher ciphers[] = {Cipher::aes_gcm_128, Cipher::aes_gcm_256,
                            Cipher::aes_cbc_128_hmac_sha256, Cipher::aes_cbc_256_hmac_sha256};
  std::printf("%-44s %6s %9s %11s %9s\n", "ESP seal (esp_seal, one core)", "bytes", "GB/s",
              "cycles/pkt", "Mpps");
  for (Cipher c : ciphers) {
    for (uint32_t s : sizes) {
      Result r = esp_seal_loop(e, c, s);
      std::printf("%-44s %6u %9.2f %11.0f %9.2f\n", std::string(to_string(c)).c_str(), s, r.gbps,
                  r.cycles, r.mpps);
    }
  }
  std::printf("\n%-44s %6s %9s %11s %9s\n", "AES-GCM-128 encrypt + tag, 8-byte AAD", "bytes",
              "GB/s", "cycles/pkt", "Mpps");
  for (uint32_t s : sizes) {
    Result d = esp_seal_loop(e, Cipher::aes_gcm_128, s);
    Result j = gcm_job_loop(e, Cipher::aes_gcm_128, s);
    Result o = openssl_gcm_loop(Cipher::aes_gcm_128, s);
    std::printf("%-44s %6u %9.2f %11.0f %9.2f\n", "ipsec-mb direct API (esp_seal)", s, d.gbps,
                d.cycles, d.mpps);
    std::printf("%-44s %6u %9.2f %11.0f %9.2f\n", "ipsec-mb job API, bursts of 32", s, j.gbps,
                j.cycles, j.mpps);
    std::printf("%-44s %6u %9.2f %11.0f %9.2f\n", "OpenSSL 3 EVP_aes_128_gcm", s, o.gbps, o.cycles,
                o.mpps);
  }
  std::printf("\n%-44s %6s %9s %11s %9s\n", "AES-CBC + HMAC-SHA-256-128, job API", "bytes", "GB/s",
              "cycles/pkt", "Mpps");
  for (Cipher c : {Cipher::aes_cbc_128_hmac_sha256, Cipher::aes_cbc_256_hmac_sha256}) {
    for (uint32_t s : sizes) {
      Result r = cbc_burst_loop(e, c, s);
      std::printf("%-44s %6u %9.2f %11.0f %9.2f\n",
                  (std::string(to_string(c)) + ", bursts of 32").c_str(), s, r.gbps, r.cycles,
                  r.mpps);
    }
  }
  std::printf("\n%-44s %6s %9s %11s %9s\n", "AES-CBC-128 + HMAC, by burst size", "bytes", "GB/s",
              "cycles/pkt", "Mpps");
  for (uint32_t s : {1500u, 9000u}) {
    for (int burst : {1, 2, 4, 8, 16, 32}) {
      Result r = cbc_burst_loop(e, Cipher::aes_cbc_128_hmac_sha256, s, burst);
      std::printf("%-44s %6u %9.2f %11.0f %9.2f\n", ("bursts of " + std::to_string(burst)).c_str(),
                  s, r.gbps, r.cycles, r.mpps);
    }
  }
  std::printf("\n%-44s %6s %9s %11s %9s\n", "Send-ring copy + checksum + AES-GCM-128", "bytes",
              "GB/s", "cycles/pkt", "Mpps");
  for (uint32_t s : {1460u, 8960u}) {
    Result a = copy_then_seal_loop(e, s, false);
    Result b = copy_then_seal_loop(e, s, true);
    std::printf("%-44s %6u %9.2f %11.0f %9.2f\n", "today: csum_copy, then seal in place", s, a.gbps,
                a.cycles, a.mpps);
    std::printf("%-44s %6u %9.2f %11.0f %9.2f\n", "fused: checksum pass, GCM ring -> frame", s,
                b.gbps, b.cycles, b.mpps);
  }
  std::printf("\n%-44s %6s %9s %11s %9s\n", "One pass over data in cache", "bytes", "GB/s",
              "cycles/pkt", "cycles/B");
  for (uint32_t s : {1460u, 8960u}) print_passes(e, s);
  std::printf(
      "\nipsec-mb 1.3's global error variable: GCM-128, Mpps per thread, one thread\n"
      "alone, then two at once (OpenSSL, which shares nothing, as the control)\n");
  for (uint32_t s : {64u, 1500u}) {
    for (bool ossl : {false, true}) {
      auto one = concurrent_gcm(1, s, ossl);
      auto two = concurrent_gcm(2, s, ossl);
      std::printf("  %-8s %5u B: one %.2f; two at once %.2f and %.2f (%.0f%% of one)\n",
                  ossl ? "OpenSSL" : "ipsec-mb", s, one[0], two[0], two[1],
                  100.0 * (two[0] + two[1]) / 2 / one[0]);
    }
  }
  return 0;
}
