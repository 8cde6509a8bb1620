// The checksum hint: finding a veth's peer through a sysfs-like tree (and, for
// interfaces without a peer, through rtnetlink), and the text that names the cause and
// the fix. The peer in another namespace is found end to end in test_checksum_hint.py.
#include "dataplane/checksum_hint.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "control/stats/layout.hpp"

namespace ws::dp {
namespace {

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ws-sysfs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root); }
  void add(const std::string& name, int index, int link) {
    std::filesystem::create_directories(root + "/" + name);
    std::ofstream(root + "/" + name + "/ifindex") << index << "\n";
    std::ofstream(root + "/" + name + "/iflink") << link << "\n";
  }
  std::string root;
};

TEST_F(FakeSysfs, FindsAPeerThatPointsBack) {
  add("eth0", 2, 2);
  add("veth-dp", 7, 8);
  add("veth-pr", 8, 7);
  LinkPeer p = find_link_peer(root, "veth-dp");
  EXPECT_TRUE(p.linked);
  EXPECT_EQ(p.name, "veth-pr");
  EXPECT_EQ(find_link_peer(root, "veth-pr").name, "veth-dp");
}

TEST_F(FakeSysfs, PeerInAnotherNamespaceIsLinkedButUnnamed) {
  // The peer's index 8 was taken by an unrelated interface in this namespace.
  add("veth-dp", 7, 8);
  add("other", 8, 8);
  LinkPeer p = find_link_peer(root, "veth-dp");
  EXPECT_TRUE(p.linked);
  EXPECT_EQ(p.name, "");
  EXPECT_FALSE(p.other_netns);  // sysfs cannot tell; find_netns_link_peer asks the kernel
}

TEST_F(FakeSysfs, UnlinkedMissingOrBadInterfaces) {
  add("eth0", 2, 2);
  EXPECT_FALSE(find_link_peer(root, "eth0").linked);
  EXPECT_FALSE(find_link_peer(root, "nope").linked);
  EXPECT_FALSE(find_link_peer(root, "").linked);
  EXPECT_FALSE(find_link_peer(root, "../eth0").linked);
  std::filesystem::create_directories(root + "/junk");
  std::ofstream(root + "/junk/ifindex") << "x\n";
  EXPECT_FALSE(find_link_peer(root, "junk").linked);
}

LinkPeer peer(std::string name, std::string netns = "", bool other_netns = false) {
  LinkPeer p;
  p.linked = true;
  p.other_netns = other_netns || !netns.empty();
  p.name = std::move(name);
  p.netns = std::move(netns);
  return p;
}

TEST(ChecksumHint, NamesThePeerAndTheCommand) {
  std::string h = checksum_hint("veth-dp", "veth", peer("veth-pr"));
  EXPECT_NE(h.find("fix: ethtool -K veth-pr tx off"), std::string::npos) << h;
  EXPECT_NE(h.find("its veth peer veth-pr"), std::string::npos) << h;
  EXPECT_EQ(h.find("namespace"), std::string::npos) << h;
  EXPECT_EQ(h.find('\n'), std::string::npos);
}

TEST(ChecksumHint, PeerInANamedNamespace) {
  std::string h = checksum_hint("veth-dp", "veth", peer("veth-pr", "peerns"));
  EXPECT_NE(h.find("fix: ip netns exec peerns ethtool -K veth-pr tx off"), std::string::npos) << h;
  // A namespace without an `ip netns` name: the peer's name, and where to run it.
  h = checksum_hint("veth-dp", "veth", peer("veth-pr", "", true));
  EXPECT_NE(h.find("fix: ethtool -K veth-pr tx off (in its namespace)"), std::string::npos) << h;
}

TEST(ChecksumHint, UnknownPeerFallsBackToADescription) {
  std::string h = checksum_hint("veth-dp", "veth", peer(""));
  EXPECT_NE(h.find("ethtool -K <the veth peer of veth-dp> tx off"), std::string::npos) << h;
  // Without the driver's name, a linked interface is still treated as a veth.
  EXPECT_EQ(checksum_hint("veth-dp", "", peer("")), h);
}

TEST(ChecksumHint, OtherInterfacesGetTheGeneralCause) {
  std::string h = checksum_hint("eth0", "e1000", LinkPeer{});
  EXPECT_NE(h.find("ethtool -K <sending interface> tx off"), std::string::npos) << h;
  EXPECT_EQ(h.find("veth"), std::string::npos) << h;
}

TEST(ChecksumHint, FitsAStatsInfoValueWithTheLongestNames) {
  std::string a(15, 'a'), b(15, 'b');
  for (const auto& h : {checksum_hint(a, "veth", peer(b)), checksum_hint(a, "veth", peer("")),
                        checksum_hint(a, "veth", peer(b, "", true)),
                        checksum_hint(a, "veth", peer(b, std::string(24, 'n'))),
                        checksum_hint(a, "veth", peer(b, std::string(200, 'n'))),
                        checksum_hint(a, "tun", LinkPeer{})}) {
    EXPECT_LT(h.size(), stats::kInfoValueMax) << h;
  }
  // A namespace name that fits is given; one that does not is left out.
  EXPECT_NE(checksum_hint(a, "veth", peer(b, std::string(24, 'n'))).find("ip netns exec"),
            std::string::npos);
  EXPECT_NE(checksum_hint(a, "veth", peer(b, std::string(200, 'n'))).find("(in its namespace)"),
            std::string::npos);
}

TEST(LinkPeer, NetlinkOnInterfacesWithoutAPeer) {
  // Unlinked (lo) and missing interfaces: not linked, nothing made up.
  LinkPeer lo = find_netns_link_peer("lo", "/nonexistent");
  EXPECT_FALSE(lo.linked);
  EXPECT_FALSE(find_netns_link_peer("no-such-if-xyz", "/nonexistent").linked);
  EXPECT_FALSE(find_netns_link_peer("", "/nonexistent").linked);
}

TEST(ChecksumHint, DriverOfAMissingInterfaceIsEmpty) {
  EXPECT_EQ(interface_driver("no-such-if-xyz"), "");
  EXPECT_EQ(interface_driver(std::string(40, 'x')), "");
}

}  // namespace
}  // namespace ws::dp
