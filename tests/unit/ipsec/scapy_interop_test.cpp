// ESP against scapy's IPsec layer, an implementation we did not write: packets scapy sealed
// open with our code, and packets we sealed open with scapy, for every cipher, both modes,
// ESN (with GCM: scapy 2.5 leaves the ESN high half out of its HMAC) and payloads across the
// padding boundaries. tests/support/scapy_esp.py makes and reads the packets at test time.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <sstream>

#include "stack/ipsec/esp.hpp"
#include "stack/wire/ipv4.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/ipsec/hex.hpp"

namespace ws::ipsec::test {
namespace {

const std::string kScript = std::string(WS_SOURCE_DIR) + "/tests/support/scapy_esp.py";

struct Case {
  Cipher cipher;
  bool tunnel = false;
  bool esn = false;
  uint64_t seq = 0;
  std::vector<uint8_t> key;
  std::vector<uint8_t> outer;
  std::vector<uint8_t> inner;
};

Cipher cipher_named(const std::string& s) {
  if (s == "aes-gcm-128") return Cipher::aes_gcm_128;
  if (s == "aes-gcm-256") return Cipher::aes_gcm_256;
  if (s == "aes-cbc-128-hmac-sha256") return Cipher::aes_cbc_128_hmac_sha256;
  return Cipher::aes_cbc_256_hmac_sha256;
}

std::string run(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), &pclose);
  std::string out;
  if (!p) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p.get())) > 0) out.append(buf, n);
  return out;
}

std::vector<Case> scapy_sealed() {
  std::vector<Case> cases;
  std::istringstream in(run("/usr/bin/python3 " + kScript + " seal"));
  std::string cipher, mode, outer, inner, key;
  int esn;
  uint64_t seq;
  while (in >> cipher >> mode >> esn >> seq >> key >> outer >> inner) {
    cases.push_back({cipher_named(cipher), mode == "tunnel", esn == 1, seq, unhex(key),
                     unhex(outer), unhex(inner)});
  }
  return cases;
}

class ScapyInterop : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.ok()); }
  CryptoEngine engine_;
};

TEST_F(ScapyInterop, WeOpenWhatScapySealed) {
  auto cases = scapy_sealed();
  ASSERT_EQ(cases.size(), 132u) << "scapy_esp.py seal failed (python3-scapy installed?)";
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.cipher)) + (c.tunnel ? " tunnel" : " transport") +
                 (c.esn ? " esn" : "") + " inner " + std::to_string(c.inner.size()));
    auto keys = make_sa_keys(engine_, c.cipher, c.key);
    ASSERT_TRUE(keys);
    auto ip = wire::Ipv4View::parse(c.outer);
    ASSERT_TRUE(ip);
    ASSERT_EQ(ip->protocol(), wire::kIpProtoEsp);
    std::vector<uint8_t> esp(c.outer.begin() + ip->header_len(), c.outer.end());
    auto h = wire::EspView::parse(esp);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->spi(), 0x1001u);
    EXPECT_EQ(h->seq_low(), static_cast<uint32_t>(c.seq));
    EXPECT_EQ(esp.size(), esp_len(c.cipher, static_cast<uint32_t>(c.inner.size())));
    Opened o;
    ASSERT_EQ(esp_open(engine_, *keys, EspSeq(c.seq), c.esn, esp.data(),
                       static_cast<uint32_t>(esp.size()), o),
              OpenError::none);
    EXPECT_EQ(o.next_header, c.tunnel ? wire::kIpProtoIpv4 : 17);
    EXPECT_EQ(hex(std::span(esp).subspan(o.payload_off, o.payload_len)), hex(c.inner));
  }
}

TEST_F(ScapyInterop, ScapyOpensWhatWeSealed) {
  auto cases = scapy_sealed();
  ASSERT_EQ(cases.size(), 132u);
  ws::test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string lines;
  for (const Case& c : cases) {
    auto keys = make_sa_keys(engine_, c.cipher, c.key);
    ASSERT_TRUE(keys);
    const auto n = static_cast<uint32_t>(c.inner.size());
    std::vector<uint8_t> pkt(20 + esp_len(c.cipher, n));
    std::copy(c.inner.begin(), c.inner.end(), pkt.begin() + 20 + esp_head_len(c.cipher));
    const uint32_t len = esp_seal(engine_, *keys, 0x1001, EspSeq(c.seq), c.esn,
                                  c.tunnel ? wire::kIpProtoIpv4 : 17, pkt.data() + 20, n);
    ASSERT_EQ(len + 20, pkt.size());
    wire::Ipv4Repr r;
    r.src = Ipv4Addr::from_octets(10, 77, 0, 1);
    r.dst = Ipv4Addr::from_octets(10, 77, 0, 2);
    r.protocol = wire::kIpProtoEsp;
    r.payload_len = static_cast<uint16_t>(len);
    wire::emit_ipv4(pkt.data(), r);
    lines += std::string(to_string(c.cipher)) + (c.tunnel ? " tunnel " : " transport ") +
             (c.esn ? "1 " : "0 ") + std::to_string(c.seq) + " " + hex(c.key) + " " + hex(pkt) +
             " " + hex(c.inner) + "\n";
  }
  const std::string file = dir.write("ours.txt", lines);
  std::istringstream out(run("/usr/bin/python3 " + kScript + " open " + file));
  std::string got;
  size_t i = 0;
  while (out >> got) {
    ASSERT_LT(i, cases.size());
    EXPECT_EQ(got, hex(cases[i].inner)) << "case " << i;
    ++i;
  }
  EXPECT_EQ(i, cases.size()) << "scapy could not open every packet";
}

}  // namespace
}  // namespace ws::ipsec::test
