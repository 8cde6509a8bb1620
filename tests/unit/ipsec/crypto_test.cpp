// Known-answer tests of the ipsec-mb wrappers: the GCM specification's test cases (McGrew and
// Viega, "The Galois/Counter Mode of Operation", cases 1-4 and 13-16), NIST CAVP
// gcmEncryptExtIV vectors with AAD, RFC 4231's HMAC-SHA-256 vectors, SP 800-38A's CBC
// vectors, and chained CBC + HMAC as ESP uses it. Each GCM vector also runs split into
// segments at every cut, the path of a chained mbuf.
#include "stack/ipsec/crypto.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/unit/ipsec/hex.hpp"

namespace ws::ipsec::test {
namespace {

struct GcmVector {
  const char* name;
  const char* key;
  const char* nonce;  // 12 bytes: the first 4 play the salt, the last 8 the ESP IV
  const char* pt;
  const char* aad;
  const char* ct;
  const char* tag;
};

constexpr const char* kSpecPt =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
constexpr const char* kSpecPt60 =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39";
constexpr const char* kSpecAad = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
constexpr const char* kSpecK128 = "feffe9928665731c6d6a8f9467308308";
constexpr const char* kSpecK256 =
    "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308";

const GcmVector kGcmVectors[] = {
    {"spec case 1", "00000000000000000000000000000000", "000000000000000000000000", "", "", "",
     "58e2fccefa7e3061367f1d57a4e7455a"},
    {"spec case 2", "00000000000000000000000000000000", "000000000000000000000000",
     "00000000000000000000000000000000", "", "0388dace60b6a392f328c2b971b2fe78",
     "ab6e47d42cec13bdf53a67b21257bddf"},
    {"spec case 3", kSpecK128, "cafebabefacedbaddecaf888", kSpecPt, "",
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
     "4d5c2af327cd64a62cf35abd2ba6fab4"},
    {"spec case 4", kSpecK128, "cafebabefacedbaddecaf888", kSpecPt60, kSpecAad,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
     "5bc94fbc3221a5db94fae95ae7121a47"},
    {"spec case 13", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"spec case 14", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "00000000000000000000000000000000", "",
     "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
    {"spec case 15", kSpecK256, "cafebabefacedbaddecaf888", kSpecPt, "",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
     "b094dac5d93471bdec1a502270e3cc6c"},
    {"spec case 16", kSpecK256, "cafebabefacedbaddecaf888", kSpecPt60, kSpecAad,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
    // CAVP gcmEncryptExtIV128.rsp, [PTlen = 128] [AADlen = 0] Count 0.
    {"cavp 128 pt128 aad0", "7fddb57453c241d03efbed3ac44e371c", "ee283a3fc75575e33efd4887",
     "d5de42b461646c255c87bd2962d3b9a2", "", "2ccda4a5415cb91e135c2a0f78c9b2fd",
     "b36d1df9b9d5e596f83e8b7f52971cb3"},
    // [PTlen = 128] [AADlen = 160] Count 0.
    {"cavp 128 pt128 aad160", "d4a22488f8dd1d5c6c19a7d6ca17964c", "f3d5837f22ac1a0425e0d1d5",
     "7b43016a16896497fb457be6d2a54122", "f1c5d424b83f96c6ad8cb28ca0d20e475e023b5a",
     "c2bd67eef5e95cac27e3b06e3031d0a8", "f23eacf9d1cdf8737726c58648826e9c"},
    // [PTlen = 408] [AADlen = 160] Count 0: neither length a whole number of blocks.
    {"cavp 128 pt408 aad160", "fe47fcce5fc32665d2ae399e4eec72ba", "5adb9609dbaeb58cbd6e7275",
     "7c0e88c88899a779228465074797cd4c2e1498d259b54390b85e3eef1c02df60e743f1b840382c4bccaf3bafb4"
     "ca8429bea063",
     "88319d6e1d3ffa5f987199166c8a9b56c2aeba5a",
     "98f4826f05a265e6dd2be82db241c0fbbbf9ffb1c173aa83964b7cf5393043736365253ddbc5db877837149"
     "5da76d269e5db3e",
     "291ef1982e4defedaa2249f898556b47"},
    // gcmEncryptExtIV256.rsp, [PTlen = 128] [AADlen = 0] Count 0.
    {"cavp 256 pt128 aad0", "31bdadd96698c204aa9ce1448ea94ae1fb4a9a0b3c9d773b51bb1822666b8f22",
     "0d18e06c7c725ac9e362e1ce", "2db5168e932556f8089a0622981d017d", "",
     "fa4362189661d163fcd6a56d8bf0405a", "d636ac1bbedd5cc3ee727dc2ab4a9489"},
};

class Engine : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.ok()); }
  CryptoEngine engine_;
};

// The vector's key and nonce as RFC 4106 key material (key || salt) and an 8-byte IV.
std::unique_ptr<SaKeys> gcm_keys(const CryptoEngine& e, const GcmVector& v, uint8_t iv[8]) {
  auto key = unhex(v.key);
  auto nonce = unhex(v.nonce);
  std::vector<uint8_t> material = key;
  material.insert(material.end(), nonce.begin(), nonce.begin() + 4);
  std::memcpy(iv, nonce.data() + 4, 8);
  return make_sa_keys(e, key.size() == 16 ? Cipher::aes_gcm_128 : Cipher::aes_gcm_256, material);
}

// Seals and opens `v` with the payload cut at `cuts` (increasing offsets inside it).
void check_gcm(const CryptoEngine& e, const GcmVector& v, const std::vector<size_t>& cuts) {
  SCOPED_TRACE(std::string(v.name) + ", " + std::to_string(cuts.size() + 1) + " segments");
  uint8_t iv[8];
  auto keys = gcm_keys(e, v, iv);
  ASSERT_TRUE(keys);
  auto data = unhex(v.pt);
  const auto aad = unhex(v.aad);
  std::vector<std::span<uint8_t>> segs;
  size_t from = 0;
  for (size_t c : cuts) {
    segs.emplace_back(data.data() + from, c - from);
    from = c;
  }
  segs.emplace_back(data.data() + from, data.size() - from);
  uint8_t tag[kIcvBytes];
  gcm_seal(e, *keys, iv, aad, segs, tag);
  EXPECT_EQ(hex(data), v.ct);
  EXPECT_EQ(hex(tag), v.tag);
  // Opened out of place from the same pieces, then in place as one piece.
  std::vector<std::span<const uint8_t>> pieces(segs.begin(), segs.end());
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(gcm_open(e, *keys, iv, aad, pieces, out.data(), tag));
  EXPECT_EQ(hex(out), v.pt);
  const std::span<const uint8_t> whole(data);
  ASSERT_TRUE(gcm_open(e, *keys, iv, aad, std::span(&whole, 1), data.data(), tag));
  EXPECT_EQ(hex(data), v.pt);
}

TEST_F(Engine, GcmVectorsInOneCall) {
  for (const auto& v : kGcmVectors) check_gcm(engine_, v, {});
}

TEST_F(Engine, GcmVectorsInSegmentsCutEverywhere) {
  for (const auto& v : kGcmVectors) {
    const size_t n = unhex(v.pt).size();
    for (size_t a = 0; a <= n; ++a) check_gcm(engine_, v, {a});
    if (n >= 3) {
      for (size_t a = 1; a + 1 < n; a += 3) check_gcm(engine_, v, {a, a + 1, n - 1});
    }
  }
}

TEST_F(Engine, GcmOpenRejectsAnyFlippedBit) {
  const GcmVector& v = kGcmVectors[3];  // case 4: AAD and a partial last block
  uint8_t iv[8];
  auto keys = gcm_keys(engine_, v, iv);
  ASSERT_TRUE(keys);
  const auto ct = unhex(v.ct);
  const auto aad = unhex(v.aad);
  const auto tag = unhex(v.tag);
  auto open = [&](std::vector<uint8_t> c, std::vector<uint8_t> a, std::vector<uint8_t> t,
                  const uint8_t* nonce_iv) {
    const std::span<const uint8_t> seg(c);
    return gcm_open(engine_, *keys, nonce_iv, a, std::span(&seg, 1), c.data(), t.data());
  };
  ASSERT_TRUE(open(ct, aad, tag, iv));
  for (size_t bit = 0; bit < ct.size() * 8; bit += 7) {
    auto c = ct;
    c[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(open(c, aad, tag, iv)) << "ciphertext bit " << bit;
  }
  for (size_t bit = 0; bit < aad.size() * 8; bit += 5) {
    auto a = aad;
    a[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(open(ct, a, tag, iv)) << "aad bit " << bit;
  }
  for (size_t bit = 0; bit < 128; ++bit) {
    auto t = tag;
    t[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(open(ct, aad, t, iv)) << "tag bit " << bit;
  }
  uint8_t other_iv[8];
  std::memcpy(other_iv, iv, 8);
  other_iv[7] ^= 1;
  EXPECT_FALSE(open(ct, aad, tag, other_iv));
}

TEST_F(Engine, KeyMaterialOfTheWrongLengthIsRefused) {
  std::vector<uint8_t> m(19);
  EXPECT_FALSE(make_sa_keys(engine_, Cipher::aes_gcm_128, m));
  m.resize(20);
  EXPECT_TRUE(make_sa_keys(engine_, Cipher::aes_gcm_128, m));
  EXPECT_FALSE(make_sa_keys(engine_, Cipher::aes_cbc_128_hmac_sha256, m));
  m.resize(64);
  EXPECT_TRUE(make_sa_keys(engine_, Cipher::aes_cbc_256_hmac_sha256, m));
}

struct HmacVector {
  std::vector<uint8_t> key;
  std::string data;
  const char* mac;  // 32 bytes, or 16 for the truncation case
};

TEST_F(Engine, Rfc4231HmacSha256) {
  std::vector<uint8_t> k4;
  for (uint8_t i = 1; i <= 25; ++i) k4.push_back(i);
  const HmacVector vs[] = {
      {std::vector<uint8_t>(20, 0x0b), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {{'J', 'e', 'f', 'e'},
       "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {std::vector<uint8_t>(20, 0xaa), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {k4, std::string(50, '\xcd'),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {std::vector<uint8_t>(20, 0x0c), "Test With Truncation", "a3b6167473100ee06e0c796c2955552b"},
      {std::vector<uint8_t>(131, 0xaa), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {std::vector<uint8_t>(131, 0xaa),
       "This is a test using a larger than block-size key and a larger than block-size data. "
       "The key needs to be hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  int n = 1;
  for (const auto& v : vs) {
    SCOPED_TRACE("RFC 4231 test case " + std::to_string(n++));
    HmacPads pads;
    precompute_hmac(engine_, v.key, pads);
    std::vector<uint8_t> out(std::string_view(v.mac).size() / 2);
    std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(v.data.data()), v.data.size());
    ASSERT_TRUE(hmac_sha256(engine_, pads, data, out));
    EXPECT_EQ(hex(out), v.mac);
  }
}

// SP 800-38A F.2.1 / F.2.5 (CBC-AES128 / AES256 encrypt), chained with HMAC-SHA-256-128 over
// an ESP header (SPI 0x1001, sequence 1), the IV and the ciphertext, as RFC 4303 lays them
// out. The tags were computed with python3-cryptography's hmac (an independent
// implementation): hmac.new(bytes(range(0x40, 0x60)), hdr + iv + ct, sha256), first 16 bytes.
TEST_F(Engine, CbcHmacSealAndOpen) {
  struct {
    Cipher cipher;
    const char* key;
    const char* ct;
    const char* tag;
  } vs[] = {
      {Cipher::aes_cbc_128_hmac_sha256, "2b7e151628aed2a6abf7158809cf4f3c",
       "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
       "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7",
       "2eb0eb0874a7671da3918446d4c093d8"},
      {Cipher::aes_cbc_256_hmac_sha256,
       "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
       "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
       "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b",
       "39f8acb41721dff22b73e4f7902efb2e"},
  };
  const std::string pt =
      "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
      "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";
  for (const auto& v : vs) {
    SCOPED_TRACE(std::string(to_string(v.cipher)));
    auto material = unhex(v.key);
    for (uint8_t b = 0x40; b < 0x60; ++b) material.push_back(b);
    auto keys = make_sa_keys(engine_, v.cipher, material);
    ASSERT_TRUE(keys);
    // ESP header (8) || IV (16) || ciphertext (64), then the ICV.
    auto buf = unhex("0000100100000001");
    for (uint8_t b = 0; b < 16; ++b) buf.push_back(b);
    auto p = unhex(pt);
    buf.insert(buf.end(), p.begin(), p.end());
    uint8_t tag[kIcvBytes];
    CbcHmacOp op{keys.get(), buf.data(), buf.size(), 24, 64, buf.data() + 8, tag};
    cbc_hmac_seal(engine_, std::span(&op, 1));
    ASSERT_TRUE(op.done);
    EXPECT_EQ(hex(std::span(buf).subspan(24)), v.ct);
    EXPECT_EQ(hex(tag), v.tag);
    uint8_t computed[kIcvBytes];
    op.tag = computed;
    cbc_hmac_open(engine_, std::span(&op, 1));
    ASSERT_TRUE(op.done);
    EXPECT_TRUE(constant_time_equal(computed, tag, kIcvBytes));
    EXPECT_EQ(hex(std::span(buf).subspan(24)), pt);
    // The same packet as a burst wide enough for the engine's wide manager (one op alone
    // went to the narrow one): the same ciphertext and tag from each lane.
    std::vector<std::vector<uint8_t>> copies(CryptoEngine::kWideBurst, buf);
    std::vector<std::array<uint8_t, kIcvBytes>> tags(copies.size());
    std::vector<CbcHmacOp> ops;
    for (size_t i = 0; i < copies.size(); ++i) {
      ops.push_back({keys.get(), copies[i].data(), copies[i].size(), 24, 64, copies[i].data() + 8,
                     tags[i].data()});
    }
    cbc_hmac_seal(engine_, ops);
    for (size_t i = 0; i < copies.size(); ++i) {
      ASSERT_TRUE(ops[i].done) << i;
      EXPECT_EQ(hex(std::span(copies[i]).subspan(24)), v.ct) << i;
      EXPECT_EQ(hex(tags[i]), v.tag) << i;
    }
  }
}

// A burst of jobs, more than the manager's lanes, with distinct keys and lengths: every one
// completes and matches the same operation done alone.
TEST_F(Engine, CbcHmacBurstMatchesSingleOps) {
  constexpr size_t kOps = 37;
  std::vector<std::unique_ptr<SaKeys>> keys;
  std::vector<std::vector<uint8_t>> bufs(kOps), alone(kOps);
  std::vector<std::array<uint8_t, kIcvBytes>> tags(kOps), alone_tags(kOps);
  std::vector<CbcHmacOp> ops(kOps);
  for (size_t i = 0; i < kOps; ++i) {
    const Cipher c = i % 2 ? Cipher::aes_cbc_256_hmac_sha256 : Cipher::aes_cbc_128_hmac_sha256;
    std::vector<uint8_t> m(key_material_bytes(c));
    for (size_t j = 0; j < m.size(); ++j) m[j] = static_cast<uint8_t>(i * 31 + j);
    keys.push_back(make_sa_keys(engine_, c, m));
    const size_t blocks = 1 + i % 9;
    bufs[i].resize(24 + 16 * blocks);
    for (size_t j = 0; j < bufs[i].size(); ++j) bufs[i][j] = static_cast<uint8_t>(i + 7 * j);
    alone[i] = bufs[i];
    ops[i] = {keys[i].get(), bufs[i].data(),     bufs[i].size(), 24,
              16 * blocks,   bufs[i].data() + 8, tags[i].data()};
  }
  cbc_hmac_seal(engine_, ops);
  for (size_t i = 0; i < kOps; ++i) {
    CbcHmacOp one = ops[i];
    one.buf = alone[i].data();
    one.iv = alone[i].data() + 8;
    one.tag = alone_tags[i].data();
    cbc_hmac_seal(engine_, std::span(&one, 1));
    EXPECT_TRUE(ops[i].done) << i;
    EXPECT_EQ(bufs[i], alone[i]) << i;
    EXPECT_EQ(tags[i], alone_tags[i]) << i;
  }
}

TEST(ConstantTimeEqual, ComparesEveryByte) {
  uint8_t a[16] = {}, b[16] = {};
  EXPECT_TRUE(constant_time_equal(a, b, 16));
  for (size_t i = 0; i < 16; ++i) {
    b[i] = 0x80;
    EXPECT_FALSE(constant_time_equal(a, b, 16)) << i;
    b[i] = 0;
  }
  EXPECT_TRUE(constant_time_equal(a, b, 0));
}

}  // namespace
}  // namespace ws::ipsec::test
