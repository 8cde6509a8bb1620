#include "control/capture/pcapng.hpp"

#include <cstring>

namespace ws::capture {

namespace {

// Block types and option codes (draft-ietf-opsawg-pcapng sections 4 and 3.5).
constexpr uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescription = 1;
constexpr uint32_t kInterfaceStatistics = 5;
constexpr uint32_t kEnhancedPacket = 6;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEnd = 0;
constexpr uint16_t kOptComment = 1;
constexpr uint16_t kShbOs = 3;
constexpr uint16_t kShbUserAppl = 4;
constexpr uint16_t kIfName = 2;
constexpr uint16_t kIfDescription = 3;
constexpr uint16_t kIfTsResol = 9;
constexpr uint16_t kEpbFlags = 2;
constexpr uint16_t kIsbIfRecv = 4;
constexpr uint16_t kIsbOsDrop = 7;
constexpr uint16_t kLinkTypeEthernet = 1;

void append(std::vector<uint8_t>& b, const void* src, size_t n) {
  size_t at = b.size();
  b.resize(at + n);
  if (n != 0) std::memcpy(b.data() + at, src, n);
}

template <typename T>
void put(std::vector<uint8_t>& b, T v) {
  append(b, &v, sizeof(T));
}

void pad4(std::vector<uint8_t>& b) {
  while (b.size() % 4 != 0) b.push_back(0);
}

}  // namespace

PcapngWriter::PcapngWriter(FILE* out, std::string_view application) : out_(out) {
  begin(kSectionHeader);
  put<uint32_t>(block_, kByteOrderMagic);
  put<uint16_t>(block_, 1);  // major
  put<uint16_t>(block_, 0);  // minor
  put<int64_t>(block_, -1);  // section length: not known in advance
  option(kShbOs, "Linux", 5);
  option(kShbUserAppl, application.data(), static_cast<uint16_t>(application.size()));
  option(kOptEnd, nullptr, 0);
  end();
}

void PcapngWriter::begin(uint32_t type) {
  block_.clear();
  put<uint32_t>(block_, type);
  put<uint32_t>(block_, 0);  // total length, set by end()
}

void PcapngWriter::option(uint16_t code, const void* value, uint16_t len) {
  put<uint16_t>(block_, code);
  put<uint16_t>(block_, len);
  append(block_, value, len);
  pad4(block_);
}

void PcapngWriter::end() {
  auto total = static_cast<uint32_t>(block_.size() + 4);
  std::memcpy(block_.data() + 4, &total, 4);
  put<uint32_t>(block_, total);
  if (ok_ && std::fwrite(block_.data(), 1, block_.size(), out_) != block_.size()) ok_ = false;
}

uint32_t PcapngWriter::add_interface(std::string_view name, std::string_view description,
                                     uint32_t snaplen) {
  begin(kInterfaceDescription);
  put<uint16_t>(block_, kLinkTypeEthernet);
  put<uint16_t>(block_, 0);
  put<uint32_t>(block_, snaplen);
  option(kIfName, name.data(), static_cast<uint16_t>(name.size()));
  option(kIfDescription, description.data(), static_cast<uint16_t>(description.size()));
  const uint8_t nanoseconds = 9;  // if_tsresol: 10^-9 s
  option(kIfTsResol, &nanoseconds, 1);
  option(kOptEnd, nullptr, 0);
  end();
  return interfaces_++;
}

void PcapngWriter::packet(uint32_t iface, uint64_t unix_ns, const uint8_t* data, uint32_t caplen,
                          uint32_t wirelen, PacketDir dir, std::string_view comment) {
  begin(kEnhancedPacket);
  put<uint32_t>(block_, iface);
  put<uint32_t>(block_, static_cast<uint32_t>(unix_ns >> 32));
  put<uint32_t>(block_, static_cast<uint32_t>(unix_ns));
  put<uint32_t>(block_, caplen);
  put<uint32_t>(block_, wirelen);
  append(block_, data, caplen);
  pad4(block_);
  if (dir != PacketDir::kUnknown) {
    uint32_t flags = static_cast<uint32_t>(dir);  // bits 0-1: inbound / outbound
    option(kEpbFlags, &flags, 4);
  }
  if (!comment.empty()) {
    option(kOptComment, comment.data(), static_cast<uint16_t>(comment.size()));
  }
  if (dir != PacketDir::kUnknown || !comment.empty()) option(kOptEnd, nullptr, 0);
  end();
}

void PcapngWriter::statistics(uint32_t iface, uint64_t unix_ns, uint64_t received, uint64_t lost) {
  begin(kInterfaceStatistics);
  put<uint32_t>(block_, iface);
  put<uint32_t>(block_, static_cast<uint32_t>(unix_ns >> 32));
  put<uint32_t>(block_, static_cast<uint32_t>(unix_ns));
  option(kIsbIfRecv, &received, 8);
  option(kIsbOsDrop, &lost, 8);
  option(kOptEnd, nullptr, 0);
  end();
}

void PcapngWriter::flush() {
  if (ok_ && std::fflush(out_) != 0) ok_ = false;
}

}  // namespace ws::capture
