// One core's ESP: its SAs, its policies (first match wins; no match is bypass, RFC 4301 4.4.1
// simplified), its crypto engine and its scratch space. The stack asks it what to do with each
// packet; it owns no buffers of the stack's.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stack/core/packet.hpp"
#include "stack/ipsec/sa.hpp"

namespace ws::ipsec {

// CBC + HMAC frames laid out and waiting for one burst of jobs (the job API is 10x faster in
// bursts than one job at a time: docs/benchmarks.md table 14).
struct CbcBurst {
  static constexpr size_t kMax = 32;
  struct Frame {
    TxBuf buf;
    uint16_t iface = 0;
    ws::Ipv4Addr next_dst;
  };
  std::array<CbcHmacOp, kMax> ops{};
  std::array<std::array<uint8_t, kIcvBytes>, kMax> tags{};
  std::array<Frame, kMax> frames{};
  size_t n = 0;
};

// Received CBC + HMAC ESP packets, checked against the window and copied out, waiting for
// one burst of verify+decrypt jobs (the stack runs it at flush time or when it is full).
// Each slot holds one ESP packet with room in front for the IPv4 header rebuilt around its
// payload; larger packets (reassembled datagrams) are opened one at a time.
struct CbcRxBurst {
  static constexpr size_t kMax = 32;
  static constexpr uint32_t kHeadroom = 64;
  static constexpr uint32_t kSlotLen = kHeadroom + 9216 + 128;
  struct Held {
    InboundSa* sa = nullptr;
    EspSeq seq;
    uint32_t len = 0;  // of the ESP packet at slot(i) + kHeadroom
    uint16_t iface = 0;
    RxMeta meta;
    std::array<uint8_t, 60> outer{};  // the outer IPv4 header (transport mode rebuilds it)
    uint8_t outer_len = 0;
    std::array<uint8_t, kIcvBytes> received{};
  };
  CbcRxBurst() : slots(kMax * kSlotLen) {}
  uint8_t* slot(size_t i) { return slots.data() + i * kSlotLen; }
  std::array<CbcHmacOp, kMax> ops{};
  std::array<std::array<uint8_t, kIcvBytes>, kMax> tags{};
  std::array<Held, kMax> held{};
  std::vector<uint8_t> slots;
  size_t n = 0;
  bool delivering = false;  // flushing: the slots are in use
};

struct Decision {
  PolicyAction action = PolicyAction::bypass;
  OutboundSa* outbound = nullptr;
  InboundSa* inbound = nullptr;
};

class EspLayer {
 public:
  // Room in front of a decrypted payload, for rebuilding an IPv4 header (with options).
  static constexpr uint32_t kScratchHeadroom = 64;
  static constexpr uint32_t kScratchLen = kScratchHeadroom + 65536;

  EspLayer();
  ~EspLayer();
  EspLayer(const EspLayer&) = delete;
  EspLayer& operator=(const EspLayer&) = delete;

  // Expands every key and, for outbound SAs, reserves their first block of sequence numbers
  // under `state_dir`. False with `error` when the crypto engine or a key fails; an SA whose
  // sequence record fails is kept but stopped, its reason added to `warnings`.
  bool init(std::span<const SaSpec> sas, std::span<const PolicySpec> policies,
            const std::string& state_dir, std::string& error, std::vector<std::string>& warnings);

  // The policy for a packet to or from `remote`. Ports: ours and the peer's (0 when none).
  Decision lookup(ws::Ipv4Addr remote, uint8_t protocol, uint16_t local_port,
                  uint16_t remote_port) const;
  // The outbound SA that may protect `protocol` (0: any) to `remote` whatever the ports: the
  // first protect policy that can match before one that surely matches. Frames are laid out
  // for it before their ports are written.
  OutboundSa* may_protect(ws::Ipv4Addr remote, uint8_t protocol) const;
  // The inbound SA for a received SPI from `src` to `dst`.
  InboundSa* find_inbound(uint32_t spi, ws::Ipv4Addr src, ws::Ipv4Addr dst);

  // ICMP "fragmentation needed" quoting an ESP packet from `src` to `dst` under `spi`: lowers
  // that outbound SA's path MTU, so the inner MTU (and TCP's MSS) account for it. Ignored
  // unless the SA is ours and the MTU is below what it uses and not below 576 (RFC 1191 and
  // RFC 5927 sanity). True when it took effect.
  bool path_mtu_reduced(ws::Ipv4Addr src, ws::Ipv4Addr dst, uint32_t spi, uint32_t mtu);

  // Reserves further sequence blocks where SAs run low (file writes + fsync: call off the
  // fast path). Returns the errors of failed reservations.
  std::vector<std::string> refill();

  const CryptoEngine& engine() const { return engine_; }
  // Room for one received ESP packet, decrypted in place (kScratchHeadroom in front), and
  // room for one datagram sealed whole before fragmentation. Separate: a decrypted request
  // may be answered while it is still held.
  std::span<uint8_t> rx_scratch() { return rx_scratch_; }
  std::span<uint8_t> tx_scratch() { return tx_scratch_; }
  CbcBurst& cbc_burst() { return cbc_burst_; }
  CbcRxBurst& cbc_rx_burst() { return cbc_rx_burst_; }
  std::span<const std::unique_ptr<OutboundSa>> outbound() const { return outbound_; }
  std::span<const std::unique_ptr<InboundSa>> inbound() const { return inbound_; }

 private:
  CryptoEngine engine_;
  std::unique_ptr<SeqStore> store_;
  std::vector<std::unique_ptr<OutboundSa>> outbound_;
  std::vector<std::unique_ptr<InboundSa>> inbound_;
  std::vector<Policy> policies_;
  std::vector<uint8_t> rx_scratch_;
  std::vector<uint8_t> tx_scratch_;
  CbcBurst cbc_burst_;
  CbcRxBurst cbc_rx_burst_;
};

}  // namespace ws::ipsec
