// A pcapng writer (draft-ietf-opsawg-pcapng): one section, interface description blocks
// with nanosecond timestamps, enhanced packet blocks with a direction flag and an optional
// comment, and interface statistics at the end. What tshark and Wireshark read.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace ws::capture {

enum class PacketDir : uint8_t { kUnknown = 0, kInbound = 1, kOutbound = 2 };

class PcapngWriter {
 public:
  // Writes to `out` (not owned); the section header goes out at once.
  PcapngWriter(FILE* out, std::string_view application);

  // An Ethernet interface; returns its id for packet().
  uint32_t add_interface(std::string_view name, std::string_view description, uint32_t snaplen);
  void packet(uint32_t iface, uint64_t unix_ns, const uint8_t* data, uint32_t caplen,
              uint32_t wirelen, PacketDir dir, std::string_view comment);
  // Interface statistics: frames seen and copies lost before they reached this file.
  void statistics(uint32_t iface, uint64_t unix_ns, uint64_t received, uint64_t lost);
  void flush();
  // False once a write failed (disk full, a closed pipe).
  bool ok() const { return ok_; }
  uint32_t interfaces() const { return interfaces_; }

 private:
  void option(uint16_t code, const void* value, uint16_t len);
  void begin(uint32_t type);
  void end();

  FILE* out_;
  std::vector<uint8_t> block_;
  uint32_t interfaces_ = 0;
  bool ok_ = true;
};

}  // namespace ws::capture
