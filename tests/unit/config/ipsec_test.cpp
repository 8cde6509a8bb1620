// The ipsec section: SAs, policies, key files (contents, permissions, relative paths) and the
// checks across items. Every error pins its position; no message or summary shows a key.
#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"
#include "tests/unit/config/helpers.hpp"

namespace ws::config::test {
namespace {

// 20 bytes: a 16-byte AES-128 key and a 4-byte salt.
constexpr std::string_view kGcmKeyHex =
    "00112233445566778899aabbccddeeff"
    "cafebabe";
// 64 bytes: a 32-byte AES-256 key and a 32-byte HMAC key (spaces and a newline are allowed).
constexpr std::string_view kCbcKeyHex =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
    "20 21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e 2f 30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e "
    "3f\n";

class IpsecConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    a_key_ = dir_.write("a.key", std::string(kGcmKeyHex) + "\n");
    b_key_ = dir_.write("b.key", kCbcKeyHex);
  }

  // The base config (lines 1..5) and an ipsec section from line 6, with `edits` applied:
  // each replaces the first occurrence of its first string.
  std::string yaml(
      std::initializer_list<std::pair<std::string_view, std::string_view>> edits = {}) {
    std::string s = with(
        "ipsec:\n"  // 6
        "  state_dir: " +
        dir_.path() +
        "\n"                           // 7
        "  sas:\n"                     // 8
        "    - name: a-to-b\n"         // 9
        "      direction: outbound\n"  // 10
        "      spi: 0x00001001\n"      // 11
        "      mode: transport\n"      // 12
        "      local: 10.0.0.1\n"      // 13
        "      remote: 10.0.0.2\n"     // 14
        "      cipher: aes-gcm-128\n"  // 15
        "      key_file: " +
        a_key_ +
        "\n"                                       // 16
        "    - name: b-to-a\n"                     // 17
        "      direction: inbound\n"               // 18
        "      spi: 8193\n"                        // 19
        "      mode: transport\n"                  // 20
        "      local: 10.0.0.1\n"                  // 21
        "      remote: 10.0.0.2\n"                 // 22
        "      cipher: aes-cbc-256-hmac-sha256\n"  // 23
        "      key_file: " +
        b_key_ +
        "\n"                         // 24
        "      replay_window: 64\n"  // 25
        "  policies:\n"              // 26
        "    - { remote: 10.0.0.2/32, protocol: any, action: protect, outbound_sa: a-to-b, "
        "inbound_sa: b-to-a }\n"                                                           // 27
        "    - { remote: 10.9.0.0/24, protocol: udp, remote_port: 53, action: bypass }\n"  // 28
        "    - { remote: 0.0.0.0/0, action: discard }\n");                                 // 29
    for (const auto& [from, to] : edits) {
      auto at = s.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) s.replace(at, from.size(), to);
    }
    return s;
  }

  ws::test::TempDir dir_;
  std::string a_key_;
  std::string b_key_;
};

TEST_F(IpsecConfig, AValidSectionLoadsWithItsKeys) {
  LoadResult r = load(yaml());
  ASSERT_TRUE(r.config) << all_errors(r);
  const auto& c = r.config->ipsec;
  EXPECT_EQ(c.state_dir, dir_.path());
  ASSERT_EQ(c.sas.size(), 2u);
  const SaConfig& a = c.sas[0];
  EXPECT_EQ(a.name, "a-to-b");
  EXPECT_EQ(a.direction, ipsec::Direction::outbound);
  EXPECT_EQ(a.spi, 0x1001u);
  EXPECT_EQ(a.mode, ipsec::Mode::transport);
  EXPECT_EQ(a.local, Ipv4Addr::from_octets(10, 0, 0, 1));
  EXPECT_EQ(a.remote, Ipv4Addr::from_octets(10, 0, 0, 2));
  EXPECT_EQ(a.cipher, ipsec::Cipher::aes_gcm_128);
  EXPECT_FALSE(a.esn);
  ASSERT_EQ(a.key.size(), 20u);
  EXPECT_EQ(a.key.bytes()[0], 0x00);
  EXPECT_EQ(a.key.bytes()[15], 0xff);
  EXPECT_EQ(a.key.bytes()[19], 0xbe);
  const SaConfig& b = c.sas[1];
  EXPECT_EQ(b.spi, 8193u);
  EXPECT_EQ(b.replay_window, 64u);
  ASSERT_EQ(b.key.size(), 64u);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(b.key.bytes()[i], i);
  ASSERT_EQ(c.policies.size(), 3u);
  EXPECT_EQ(c.policies[0].action, PolicyAction::protect);
  EXPECT_EQ(c.policies[0].outbound_sa, "a-to-b");
  EXPECT_EQ(c.policies[0].inbound_sa, "b-to-a");
  EXPECT_EQ(c.policies[1].protocol, PolicyProtocol::udp);
  EXPECT_EQ(c.policies[1].remote_port, std::optional<uint16_t>(53));
  EXPECT_FALSE(c.policies[1].local_port);
  EXPECT_EQ(c.policies[2].action, PolicyAction::discard);
  EXPECT_EQ(c.policies[2].remote.prefix_len, 0);
}

TEST_F(IpsecConfig, DefaultsWithoutTheSection) {
  LoadResult r = load(kBase);
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_TRUE(r.config->ipsec.sas.empty());
  EXPECT_TRUE(r.config->ipsec.policies.empty());
}

TEST_F(IpsecConfig, DefaultsOfOptionalKeys) {
  LoadResult r = load(yaml({{"      mode: transport\n", ""}, {"      replay_window: 64\n", ""}}));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ipsec.sas[0].mode, ipsec::Mode::transport);
  EXPECT_EQ(r.config->ipsec.sas[1].replay_window, 1024u);
  EXPECT_EQ(r.config->ipsec.policies[2].protocol, PolicyProtocol::any);
}

TEST_F(IpsecConfig, TheSummaryNamesSasButNeverShowsAKey) {
  LoadResult r = load(yaml());
  ASSERT_TRUE(r.config) << all_errors(r);
  const std::string text = describe(*r.config);
  EXPECT_NE(text.find("a-to-b (outbound transport aes-gcm-128, spi 0x00001001"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("cafebabe"), std::string::npos) << text;
  EXPECT_EQ(text.find("00112233"), std::string::npos) << text;
  EXPECT_EQ(text.find("0a0b0c"), std::string::npos) << text;
}

TEST_F(IpsecConfig, AKeyFileOthersCanReadIsRefusedByName) {
  dir_.write("a.key", std::string(kGcmKeyHex), 0644);
  EXPECT_TRUE(
      one_error(yaml(), 16, 17,
                {"ipsec.sas[0].key_file", a_key_, "permissions 0644", "too open", "chmod 600"}));
}

TEST_F(IpsecConfig, AKeyFileTheGroupCanAccessIsRefused) {
  dir_.write("a.key", std::string(kGcmKeyHex), 0620);
  EXPECT_TRUE(one_error(yaml(), 16, 17, {a_key_, "permissions 0620", "too open"}));
}

TEST_F(IpsecConfig, AKeyOfTheWrongLengthSaysWhatTheCipherNeeds) {
  dir_.write("a.key", "00112233445566778899aabbccddeeff\n");
  EXPECT_TRUE(one_error(
      yaml(), 16, 17,
      {a_key_, "holds 16 bytes", "aes-gcm-128", "16-byte AES key", "4-byte salt", "needs 20"}));
  EXPECT_TRUE(one_error(yaml({{"cipher: aes-gcm-128", "cipher: aes-cbc-128-hmac-sha256"}}), 16, 17,
                        {"holds 16 bytes", "32-byte HMAC key", "needs 48"}));
}

TEST_F(IpsecConfig, KeyFileContentErrorsNeverQuoteTheFile) {
  dir_.write("a.key", "00112233445566778899aabbccddeeffcafebabZ");
  LoadResult r = load(yaml());
  ASSERT_EQ(r.errors.size(), 1u) << all_errors(r);
  EXPECT_NE(r.errors[0].message.find("not a hex digit (at byte 39)"), std::string::npos)
      << r.errors[0].format();
  EXPECT_EQ(r.errors[0].message.find("cafebab"), std::string::npos) << r.errors[0].format();
  dir_.write("a.key", "0011223");
  EXPECT_TRUE(one_error(yaml(), 16, 17, {"odd number of hex digits"}));
}

TEST_F(IpsecConfig, MissingAndUnusableKeyFiles) {
  EXPECT_TRUE(one_error(yaml({{a_key_, dir_.file("nope.key")}}), 16, 17,
                        {dir_.file("nope.key"), "cannot be read", "No such file"}));
  EXPECT_TRUE(one_error(yaml({{a_key_, dir_.path()}}), 16, 17, {"is not a regular file"}));
}

TEST_F(IpsecConfig, RelativeKeyPathsAreRelativeToTheConfigFile) {
  std::string text = yaml({{a_key_, "a.key"}});
  const std::string cfg = dir_.write("wirespeed.yaml", text);
  LoadResult r = load_config_file(cfg);
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ipsec.sas[0].key.size(), 20u);
  EXPECT_EQ(r.config->ipsec.sas[0].key_file, "a.key");
}

TEST_F(IpsecConfig, SpiRange) {
  EXPECT_TRUE(one_error(yaml({{"spi: 8193", "spi: 255"}}), 19, 12, {"255 is out of range 256.."}));
  EXPECT_TRUE(one_error(yaml({{"spi: 0x00001001", "spi: 0xff"}}), 11, 12,
                        {"'0xff' is not an SPI in 0x100..0xffffffff"}));
  EXPECT_TRUE(one_error(yaml({{"spi: 0x00001001", "spi: 0x100000000"}}), 11, 12, {"not an SPI"}));
  EXPECT_TRUE(one_error(yaml({{"spi: 0x00001001", "spi: 0x12g4"}}), 11, 12, {"not an SPI"}));
  LoadResult r = load(yaml({{"spi: 0x00001001", "spi: 0xFFFFFFFF"}}));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ipsec.sas[0].spi, 0xffffffffu);
}

TEST_F(IpsecConfig, ReplayWindow) {
  EXPECT_TRUE(one_error(yaml({{"replay_window: 64", "replay_window: 16"}}), 25, 22,
                        {"16 is neither 0 (off) nor in 32..4096"}));
  EXPECT_TRUE(one_error(yaml({{"replay_window: 64", "replay_window: 4097"}}), 25, 22,
                        {"out of range 0..4096"}));
  LoadResult r = load(yaml({{"replay_window: 64", "replay_window: 0"}}));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ipsec.sas[1].replay_window, 0u);
  EXPECT_TRUE(one_error(yaml({{"      key_file: " + a_key_ + "\n",
                               "      key_file: " + a_key_ + "\n      replay_window: 64\n"}}),
                        17, 7, {"ipsec.sas[0].replay_window", "inbound SAs only"}));
}

TEST_F(IpsecConfig, EnumerationsAndRequiredKeys) {
  EXPECT_TRUE(one_error(yaml({{"cipher: aes-gcm-128", "cipher: aes-gcm-192"}}), 15, 15,
                        {"'aes-gcm-192' is not one of", "aes-cbc-256-hmac-sha256"}));
  EXPECT_TRUE(one_error(yaml({{"mode: transport", "mode: beet"}}), 12, 13, {"transport, tunnel"}));
  EXPECT_TRUE(
      one_error(yaml({{"direction: outbound", "direction: out"}}), 10, 18, {"outbound, inbound"}));
  EXPECT_TRUE(one_error(yaml({{"      remote: 10.0.0.2\n      cipher: aes-gcm-128\n",
                               "      cipher: aes-gcm-128\n"}}),
                        9, 7, {"ipsec.sas[0]: missing required key 'remote'"}));
  EXPECT_TRUE(one_error(yaml({{"mode: transport", "mode: transport\n      esn: 1"}}), 13, 12,
                        {"esn: expected true or false"}));
  EXPECT_TRUE(one_error(yaml({{"replay_window: 64", "replay_windw: 64"}}), 25, 7,
                        {"unknown key 'replay_windw'", "did you mean 'replay_window'"}));
}

TEST_F(IpsecConfig, DuplicateNamesAndSpis) {
  EXPECT_TRUE(one_error(
      yaml({{"name: b-to-a", "name: a-to-b"},
            {"action: protect, outbound_sa: a-to-b, inbound_sa: b-to-a", "action: bypass"}}),
      17, 13, {"duplicate SA name 'a-to-b'", "line 9"}));
  // The same SPI in the other direction is fine; in the same direction to the same peer, not.
  LoadResult r = load(yaml({{"spi: 8193", "spi: 4097"}}));
  EXPECT_TRUE(r.config) << all_errors(r);
  EXPECT_TRUE(one_error(
      yaml({{"spi: 8193", "spi: 4097"},
            {"direction: inbound", "direction: outbound"},
            {"      replay_window: 64\n", ""},
            {"action: protect, outbound_sa: a-to-b, inbound_sa: b-to-a", "action: bypass"}}),
      19, 12, {"SPI 4097 is already used by outbound SA 'a-to-b'"}));
}

TEST_F(IpsecConfig, AMissingRemoteIsOneError) {
  EXPECT_TRUE(one_error(yaml({{"      remote: 10.0.0.2\n      cipher: aes-gcm-128\n",
                               "      cipher: aes-gcm-128\n"}}),
                        9, 7, {"ipsec.sas[0]: missing required key 'remote'"}));
}

TEST_F(IpsecConfig, LocalMustBeOneOfOurAddresses) {
  EXPECT_TRUE(one_error(yaml({{"local: 10.0.0.1", "local: 10.0.0.7"}}), 13, 14,
                        {"10.0.0.7 is not the address of any port"}));
}

TEST_F(IpsecConfig, StateDirIsRequiredForOutboundSasAndAbsolute) {
  EXPECT_TRUE(one_error(yaml({{"  state_dir: " + dir_.path() + "\n", ""}}), 7, 3,
                        {"ipsec: missing required key 'state_dir'"}));
  EXPECT_TRUE(one_error(yaml({{"state_dir: " + dir_.path(), "state_dir: var/ws"}}), 7, 14,
                        {"'var/ws' is not an absolute path"}));
}

TEST_F(IpsecConfig, PolicyReferences) {
  EXPECT_TRUE(one_error(yaml({{"outbound_sa: a-to-b", "outbound_sa: a-to-c"}}), 27, 75,
                        {"ipsec.policies[0].outbound_sa: no SA is named 'a-to-c'"}));
  EXPECT_TRUE(one_error(yaml({{"outbound_sa: a-to-b", "outbound_sa: b-to-a"}}), 27, 75,
                        {"SA 'b-to-a' is inbound, not outbound"}));
  EXPECT_TRUE(one_error(
      yaml({{"remote: 10.0.0.2/32, protocol: any", "remote: 10.0.0.0/24, protocol: any"}}), 27, 17,
      {"policies[0].remote: SA 'a-to-b' is in transport mode", "must be 10.0.0.2/32"}));
  EXPECT_TRUE(one_error(yaml({{", inbound_sa: b-to-a }", " }"}}), 27, 7,
                        {"missing required key 'inbound_sa'", "protect policy names both SAs"}));
  EXPECT_TRUE(one_error(yaml({{"action: bypass }", "action: bypass, inbound_sa: b-to-a }"}}), 28,
                        78, {"only a protect policy names SAs"}));
}

TEST_F(IpsecConfig, TunnelModePoliciesMayCoverSubnets) {
  LoadResult r =
      load(yaml({{"mode: transport", "mode: tunnel"},
                 {"mode: transport", "mode: tunnel"},
                 {"remote: 10.0.0.2/32, protocol: any", "remote: 10.8.0.0/16, protocol: any"}}));
  ASSERT_TRUE(r.config) << all_errors(r);
  EXPECT_EQ(r.config->ipsec.sas[0].mode, ipsec::Mode::tunnel);
}

TEST_F(IpsecConfig, PolicyPortsNeedTcpOrUdp) {
  EXPECT_TRUE(
      one_error(yaml({{"protocol: udp, remote_port: 53", "protocol: icmp, remote_port: 53"}}), 28,
                46, {"remote_port: ports need 'protocol: tcp' or 'protocol: udp'"}));
  EXPECT_TRUE(
      one_error(yaml({{"remote: 0.0.0.0/0, action", "remote: 0.0.0.0/0, local_port: 9, action"}}),
                29, 28, {"local_port: ports need"}));
  EXPECT_TRUE(
      one_error(yaml({{"remote_port: 53", "remote_port: 0"}}), 28, 58, {"out of range 1..65535"}));
  EXPECT_TRUE(one_error(yaml({{"action: discard", "action: drop"}}), 29, 36,
                        {"'drop' is not one of: protect, bypass, discard"}));
  EXPECT_TRUE(one_error(yaml({{"remote: 0.0.0.0/0", "remote: 0.0.0.0"}}), 29, 17,
                        {"not an IPv4 address/prefix"}));
}

}  // namespace
}  // namespace ws::config::test
