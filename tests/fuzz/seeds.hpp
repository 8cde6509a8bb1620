// Seed inputs shared by the fuzz targets: the frames captured from Linux that the unit
// tests use, cut at the layer each target parses.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "tests/fuzz/fuzz_target.hpp"
#include "tests/unit/wire/captured_frames.hpp"

namespace ws::fuzz {

inline std::vector<std::span<const uint8_t>> captured_frames() {
  namespace td = ws::testdata;
  return {td::kArpRequest,  td::kArpReply, td::kIcmpEchoRequest, td::kIcmpEchoReply,
          td::kUdpDnsQuery, td::kTcpSyn,   td::kTcpSynAck,       td::kTcpData};
}

inline std::vector<std::span<const uint8_t>> captured_ipv4_frames() {
  namespace td = ws::testdata;
  return {td::kIcmpEchoRequest, td::kIcmpEchoReply, td::kUdpDnsQuery,
          td::kTcpSyn,          td::kTcpSynAck,     td::kTcpData};
}

inline std::vector<std::span<const uint8_t>> captured_tcp_frames() {
  namespace td = ws::testdata;
  return {td::kTcpSyn, td::kTcpSynAck, td::kTcpData};
}

// Each frame with its first `skip` bytes removed (14: from the IP header, 34: from L4).
inline std::vector<Bytes> without_prefix(const std::vector<std::span<const uint8_t>>& frames,
                                         size_t skip) {
  std::vector<Bytes> out;
  for (auto f : frames) {
    if (f.size() >= skip) out.emplace_back(f.begin() + static_cast<std::ptrdiff_t>(skip), f.end());
  }
  return out;
}

}  // namespace ws::fuzz
