// ESP transforms on contiguous bytes (RFC 4303, RFC 4106 for GCM, RFC 3602 + RFC 4868 for
// CBC + HMAC): the sizes an SA adds, sealing a payload in place, and opening a received ESP
// packet in place. The IP headers around them belong to the caller.
#pragma once

#include <cstdint>

#include "stack/core/packet_view.hpp"
#include "stack/ipsec/crypto.hpp"
#include "stack/ipsec/replay.hpp"
#include "stack/wire/esp.hpp"

namespace ws::ipsec {

constexpr uint32_t kOuterIpv4Len = 20;  // the header tunnel mode adds

constexpr uint32_t round_up(uint32_t n, uint32_t to) { return (n + to - 1) / to * to; }

// ESP header and IV: the bytes in front of the payload.
constexpr uint32_t esp_head_len(Cipher c) {
  return wire::EspView::kHeaderLen + static_cast<uint32_t>(iv_bytes(c));
}
// The ESP packet (header through ICV) around `payload_len` bytes.
constexpr uint32_t esp_len(Cipher c, uint32_t payload_len) {
  return esp_head_len(c) +
         round_up(payload_len + wire::EspView::kTrailerLen, static_cast<uint32_t>(pad_block(c))) +
         static_cast<uint32_t>(kIcvBytes);
}
// The largest payload whose ESP packet fits in `room` bytes (0 when none does).
constexpr uint32_t esp_max_payload(Cipher c, uint32_t room) {
  const uint32_t fixed = esp_head_len(c) + static_cast<uint32_t>(kIcvBytes);
  if (room < fixed + static_cast<uint32_t>(pad_block(c))) return 0;
  const uint32_t body = (room - fixed) / pad_block(c) * pad_block(c);
  return body - wire::EspView::kTrailerLen;
}

// Seals the `payload_len` bytes at esp + esp_head_len(cipher): writes the ESP header (SPI,
// the low half of `seq`), the IV, the trailer, encrypts, and writes the ICV; there must be
// room up to esp + esp_len(). Returns esp_len(). GCM's IV is the sequence number (RFC 4106
// 3.1); CBC's is the sequence number encrypted under an IV key, so it is unpredictable
// (RFC 3602 2.3, NIST SP 800-38A appendix C).
uint32_t esp_seal(const CryptoEngine& e, const SaKeys& k, uint32_t spi, EspSeq seq, bool esn,
                  uint8_t next_header, uint8_t* esp, uint32_t payload_len);

// CBC + HMAC sealing in two steps, so that a burst of packets goes to the job API at once:
// prepare lays out the packet (header, IV, trailer) and fills `op`, whose tag goes to `tag`;
// after cbc_hmac_seal() ran over the burst, finish copies each tag into its packet's ICV.
uint32_t esp_seal_cbc_prepare(const CryptoEngine& e, const SaKeys& k, uint32_t spi, EspSeq seq,
                              bool esn, uint8_t next_header, uint8_t* esp, uint32_t payload_len,
                              CbcHmacOp& op, uint8_t tag[kIcvBytes]);
void esp_seal_cbc_finish(const CbcHmacOp& op);

enum class OpenError { none, malformed, auth_failed, bad_padding };

struct Opened {
  uint32_t payload_off = 0;  // from the start of the ESP header
  uint32_t payload_len = 0;
  uint8_t next_header = 0;
};

// Verifies and decrypts the ESP packet of `len` bytes at `esp` in place. With ESN, `seq`
// carries the high half the caller inferred; the low half is read from the header.
OpenError esp_open(const CryptoEngine& e, const SaKeys& k, EspSeq seq, bool esn, uint8_t* esp,
                   uint32_t len, Opened& out);
// The same for a received packet still in its buffers (`esp`, possibly chained), opened into
// `dst` (esp.size() bytes of room): header, IV and ICV are copied and GCM decrypts the
// ciphertext on its way out of the buffers, so the packet is read once rather than copied and
// then decrypted. CBC + HMAC copies, then opens in place.
OpenError esp_open(const CryptoEngine& e, const SaKeys& k, EspSeq seq, bool esn,
                   const PacketView& esp, uint8_t* dst, Opened& out);

// CBC + HMAC opening in two steps, so that a burst of received packets goes to the job API at
// once: prepare checks the lengths, saves the received ICV to `received` and fills `op`
// (the computed tag goes to `computed`); after cbc_hmac_open() ran over the burst, finish
// compares the tags in constant time and reads the trailer. `seq` as for esp_open.
OpenError esp_open_cbc_prepare(const SaKeys& k, EspSeq seq, bool esn, uint8_t* esp, uint32_t len,
                               CbcHmacOp& op, uint8_t received[kIcvBytes],
                               uint8_t computed[kIcvBytes]);
OpenError esp_open_cbc_finish(const CbcHmacOp& op, const uint8_t received[kIcvBytes], Opened& out);

}  // namespace ws::ipsec
