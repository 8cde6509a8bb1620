// ESP sizes and the open path's refusals: every length and padding error is named, a wrong
// key or sequence number fails authentication, and CBC with ESN authenticates the high half.
#include "stack/ipsec/esp.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ws::ipsec {
namespace {

constexpr Cipher kAll[] = {Cipher::aes_gcm_128, Cipher::aes_gcm_256,
                           Cipher::aes_cbc_128_hmac_sha256, Cipher::aes_cbc_256_hmac_sha256};

std::vector<uint8_t> material(Cipher c, uint8_t seed) {
  std::vector<uint8_t> m(key_material_bytes(c));
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(seed + 3 * i);
  return m;
}

TEST(EspSizes, OverheadPerCipher) {
  // GCM: 8 header + 8 IV + payload and trailer to 4 bytes + 16 ICV.
  EXPECT_EQ(esp_len(Cipher::aes_gcm_128, 0), 8u + 8 + 4 + 16);
  EXPECT_EQ(esp_len(Cipher::aes_gcm_128, 2), 8u + 8 + 4 + 16);
  EXPECT_EQ(esp_len(Cipher::aes_gcm_128, 3), 8u + 8 + 8 + 16);
  // CBC: 8 header + 16 IV + payload and trailer to 16 bytes + 16 ICV.
  EXPECT_EQ(esp_len(Cipher::aes_cbc_128_hmac_sha256, 14), 8u + 16 + 16 + 16);
  EXPECT_EQ(esp_len(Cipher::aes_cbc_128_hmac_sha256, 15), 8u + 16 + 32 + 16);
  for (Cipher c : kAll) {
    for (uint32_t room = 0; room < 200; ++room) {
      const uint32_t p = esp_max_payload(c, room);
      if (p == 0 && room < esp_len(c, 0)) continue;
      EXPECT_LE(esp_len(c, p), room) << room;
      EXPECT_GT(esp_len(c, p + 1), room) << room;  // the largest that fits
    }
  }
}

class Esp : public ::testing::TestWithParam<Cipher> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(engine_.ok());
    keys_ = make_sa_keys(engine_, GetParam(), material(GetParam(), 1));
    ASSERT_TRUE(keys_);
  }
  // A sealed packet of `n` payload bytes.
  std::vector<uint8_t> seal(uint32_t n, EspSeq seq, bool esn) {
    std::vector<uint8_t> b(esp_len(GetParam(), n));
    for (uint32_t i = 0; i < n; ++i) b[esp_head_len(GetParam()) + i] = static_cast<uint8_t>(i);
    EXPECT_EQ(esp_seal(engine_, *keys_, 0xabcd, seq, esn, 17, b.data(), n), b.size());
    return b;
  }
  OpenError open(std::vector<uint8_t> b, EspSeq seq, bool esn, const SaKeys* k = nullptr) {
    Opened o;
    return esp_open(engine_, k ? *k : *keys_, seq, esn, b.data(), static_cast<uint32_t>(b.size()),
                    o);
  }
  CryptoEngine engine_;
  std::unique_ptr<SaKeys> keys_;
};

TEST_P(Esp, RoundTripsEverySizeWithAndWithoutEsn) {
  for (bool esn : {false, true}) {
    for (uint32_t n = 0; n < 70; ++n) {
      const EspSeq seq = EspSeq::from_halves(esn ? 3 : 0, 100 + n);
      auto b = seal(n, seq, esn);
      Opened o;
      ASSERT_EQ(esp_open(engine_, *keys_, seq, esn, b.data(), static_cast<uint32_t>(b.size()), o),
                OpenError::none)
          << n;
      EXPECT_EQ(o.payload_len, n);
      EXPECT_EQ(o.next_header, 17);
      for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(b[o.payload_off + i], static_cast<uint8_t>(i));
    }
  }
}

// A received packet in pieces (a chained buffer), cut at every offset into two and at a
// few into three: opened out of its buffers into a separate one, the same payload, and the
// buffers unchanged; a flipped bit in the last piece fails.
TEST_P(Esp, OpensOutOfChainedBuffersCutAnywhere) {
  const auto b = seal(300, EspSeq(9), false);
  const auto n = b.size();
  auto open_cut = [&](const std::vector<uint8_t>& pkt, std::vector<size_t> cuts) {
    cuts.push_back(n);
    std::vector<PacketView::Segment> segs;
    size_t from = 0;
    for (size_t c : cuts) {
      segs.emplace_back(pkt.data() + from, c - from);
      from = c;
    }
    std::vector<uint8_t> out(n);
    Opened o;
    const OpenError err =
        esp_open(engine_, *keys_, EspSeq(9), false, PacketView(segs, n), out.data(), o);
    if (err == OpenError::none) {
      EXPECT_EQ(o.payload_len, 300u);
      for (uint32_t i = 0; i < 300; ++i) EXPECT_EQ(out[o.payload_off + i], static_cast<uint8_t>(i));
    }
    return err;
  };
  for (size_t a = 0; a <= n; ++a) ASSERT_EQ(open_cut(b, {a}), OpenError::none) << a;
  for (size_t a = 1; a + 40 < n; a += 37) {
    ASSERT_EQ(open_cut(b, {a, a + 17, a + 40}), OpenError::none) << a;
  }
  EXPECT_EQ(b, seal(300, EspSeq(9), false));  // read only
  auto c = b;
  c[n - kIcvBytes - 5] ^= 0x80;
  EXPECT_EQ(open_cut(c, {20, n - 30}), OpenError::auth_failed);
}

TEST_P(Esp, IvsNeverRepeatAcrossSequenceNumbers) {
  auto a = seal(10, EspSeq(1), false);
  auto b = seal(10, EspSeq(2), false);
  EXPECT_NE(std::memcmp(a.data() + 8, b.data() + 8, iv_bytes(GetParam())), 0);
}

TEST_P(Esp, AWrongKeyOrSequenceFailsAuthentication) {
  auto b = seal(40, EspSeq(5), false);
  EXPECT_EQ(open(b, EspSeq(5), false), OpenError::none);
  auto other = make_sa_keys(engine_, GetParam(), material(GetParam(), 2));
  EXPECT_EQ(open(b, EspSeq(5), false, other.get()), OpenError::auth_failed);
  // With ESN the unsent high half is authenticated: a wrong guess fails.
  auto e = seal(40, EspSeq::from_halves(1, 5), true);
  EXPECT_EQ(open(e, EspSeq::from_halves(1, 5), true), OpenError::none);
  EXPECT_EQ(open(e, EspSeq::from_halves(2, 5), true), OpenError::auth_failed);
  for (size_t i = 0; i < b.size(); ++i) {
    auto c = b;
    c[i] ^= 0x01;
    EXPECT_NE(open(c, EspSeq(5), false), OpenError::none) << "byte " << i;
  }
}

TEST_P(Esp, TruncatedAndMisalignedPacketsAreMalformed) {
  auto b = seal(40, EspSeq(5), false);
  const auto block = static_cast<uint32_t>(pad_block(GetParam()));
  for (size_t len = 0; len < esp_head_len(GetParam()) + block + kIcvBytes; ++len) {
    EXPECT_EQ(open(std::vector<uint8_t>(b.begin(), b.begin() + len), EspSeq(5), false),
              OpenError::malformed)
        << len;
  }
  auto cut = b;
  cut.pop_back();  // the ICV is one byte short: the ciphertext no longer aligns
  EXPECT_EQ(open(cut, EspSeq(5), false), OpenError::malformed);
}

// Encrypts an arbitrary plaintext body (trailer included, a whole number of blocks) as an
// ESP packet with SPI 1 and sequence number 9, through the cipher wrappers directly, so the
// trailer can be anything.
std::vector<uint8_t> seal_body(const CryptoEngine& e, const SaKeys& k,
                               const std::vector<uint8_t>& body) {
  const uint32_t head = esp_head_len(k.cipher);
  std::vector<uint8_t> b(head + body.size() + kIcvBytes);
  store_be32(b.data(), 1);
  store_be32(b.data() + 4, 9);
  std::copy(body.begin(), body.end(), b.begin() + head);
  uint8_t* icv = b.data() + head + body.size();
  if (is_gcm(k.cipher)) {
    store_be32(b.data() + 8, 0);
    store_be32(b.data() + 12, 9);
    uint8_t aad[8];
    std::memcpy(aad, b.data(), 8);
    std::span<uint8_t> seg(b.data() + head, body.size());
    gcm_seal(e, k, b.data() + 8, aad, std::span(&seg, 1), icv);
  } else {
    uint8_t tag[kIcvBytes];
    CbcHmacOp op{&k, b.data(), head + body.size(), head, body.size(), b.data() + 8, tag};
    cbc_hmac_seal(e, std::span(&op, 1));
    std::memcpy(icv, tag, kIcvBytes);
  }
  return b;
}

TEST_P(Esp, BadPaddingIsNamed) {
  const auto block = static_cast<uint32_t>(pad_block(GetParam()));
  std::vector<uint8_t> body(2 * block, 0xaa);
  auto with_trailer = [&](std::initializer_list<uint8_t> tail) {
    auto b = body;
    std::copy(tail.begin(), tail.end(), b.end() - static_cast<long>(tail.size()));
    return seal_body(engine_, *keys_, b);
  };
  EXPECT_EQ(open(with_trailer({1, 2, 3, 3, 17}), EspSeq(9), false), OpenError::none);
  EXPECT_EQ(open(with_trailer({1, 7, 3, 3, 17}), EspSeq(9), false), OpenError::bad_padding);
  EXPECT_EQ(open(with_trailer({0, 0, 0, 0, 0, 3, 17}), EspSeq(9), false), OpenError::bad_padding);
  // A pad length that runs past the start of the payload.
  const auto too_long = static_cast<uint8_t>(2 * block - 1);
  EXPECT_EQ(open(with_trailer({too_long, 17}), EspSeq(9), false), OpenError::bad_padding);
}

INSTANTIATE_TEST_SUITE_P(AllCiphers, Esp, ::testing::ValuesIn(kAll), [](const auto& i) {
  std::string s(to_string(i.param));
  for (char& ch : s) ch = ch == '-' ? '_' : ch;
  return s;
});

}  // namespace
}  // namespace ws::ipsec
