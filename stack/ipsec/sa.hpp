// The SAs and policies of one core's ESP layer, as the data path holds them: keys expanded,
// sequence state, counters. Built from SaSpec / PolicySpec, which the data plane fills from
// the config.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "stack/core/addr.hpp"
#include "stack/ipsec/crypto.hpp"
#include "stack/ipsec/replay.hpp"
#include "stack/ipsec/seq_store.hpp"
#include "stack/ipsec/sequence.hpp"
#include "stack/ipsec/types.hpp"

namespace ws::ipsec {

// Per-SA error reasons: the `reason` label of wirespeed_ipsec_errors_total (add, never rename).
enum class SaError : uint8_t {
  auth_failed,
  replayed,
  outside_window,
  bad_padding,
  sequence_exhausted,
  kCount
};
inline constexpr size_t kSaErrorCount = static_cast<size_t>(SaError::kCount);
std::string_view sa_error_name(SaError e);

struct SaCounters {
  uint64_t packets = 0;
  uint64_t bytes = 0;  // protected payload bytes (the inner packet or L4 segment)
  std::array<uint64_t, kSaErrorCount> errors{};
  void add(SaError e) { ++errors[static_cast<size_t>(e)]; }
  uint64_t get(SaError e) const { return errors[static_cast<size_t>(e)]; }
};

struct SaSpec {
  std::string name;
  Direction direction = Direction::outbound;
  uint32_t spi = 0;
  Mode mode = Mode::transport;
  ws::Ipv4Addr local;
  ws::Ipv4Addr remote;
  Cipher cipher = Cipher::aes_gcm_128;
  KeyMaterial key;
  uint32_t replay_window = 1024;
  bool esn = false;
  // Outbound: this core sends under the SA (another core owns it when false; see
  // OutboundSa::elsewhere).
  bool here = true;
};

struct PolicySpec {
  ws::Ipv4Cidr remote;
  uint8_t protocol = 0;  // IP protocol number; 0 = any
  std::optional<uint16_t> local_port;
  std::optional<uint16_t> remote_port;
  PolicyAction action = PolicyAction::bypass;
  std::string outbound_sa;
  std::string inbound_sa;
};

struct Sa {
  std::string name;
  uint32_t spi = 0;
  Mode mode = Mode::transport;
  ws::Ipv4Addr local;
  ws::Ipv4Addr remote;
  Cipher cipher = Cipher::aes_gcm_128;
  bool esn = false;
  std::unique_ptr<SaKeys> keys;
  SaCounters counters;

  // The ESP packet around `inner_len` bytes, plus the outer header in tunnel mode: what the
  // SA adds on top of a plaintext IPv4 packet's own header.
  uint32_t wire_len(uint32_t inner_len) const;
  // The largest packet the SA's inner side may carry when the link MTU is `mtu`: an IPv4
  // packet (header included) whose ESP form fits.
  uint32_t inner_mtu(uint32_t mtu) const;
};

struct OutboundSa : Sa {
  explicit OutboundSa(bool esn) : seq(esn) {}
  OutboundSequence seq;
  SeqRecordId record;
  // The path MTU toward the SA's outer destination, lowered by ICMP "fragmentation needed"
  // quoting one of its packets (RFC 1191 via RFC 4301 8.2); 0 = the link's MTU.
  uint32_t path_mtu = 0;
  bool store_failed = false;  // the reservation could not be written: the SA sends nothing
  // Another core owns the SA (its peers are steered there): this core reserves no numbers
  // and sends nothing under it, so numbers never repeat across cores.
  bool elsewhere = false;
  bool exhaustion_logged = false;
};

struct InboundSa : Sa {
  InboundSa(uint32_t window, bool esn) : replay(window, esn) {}
  ReplayWindow replay;
};

struct Policy {
  ws::Ipv4Cidr remote;
  uint8_t protocol = 0;
  std::optional<uint16_t> local_port;
  std::optional<uint16_t> remote_port;
  PolicyAction action = PolicyAction::bypass;
  OutboundSa* outbound = nullptr;
  InboundSa* inbound = nullptr;
};

}  // namespace ws::ipsec
