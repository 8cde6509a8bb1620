#include "stack/ipsec/esp.hpp"

#include <array>
#include <cstring>

namespace ws::ipsec {

namespace {

void store_be64(uint8_t* p, uint64_t v) {
  store_be32(p, static_cast<uint32_t>(v >> 32));
  store_be32(p + 4, static_cast<uint32_t>(v));
}

// RFC 4106 section 5: SPI || sequence number, or SPI || high || low with ESN.
uint32_t make_aad(uint32_t spi, EspSeq seq, bool esn, uint8_t aad[12]) {
  store_be32(aad, spi);
  if (!esn) {
    store_be32(aad + 4, seq.low());
    return 8;
  }
  store_be32(aad + 4, seq.high());
  store_be32(aad + 8, seq.low());
  return 12;
}

// The CBC IV of `seq`: E_iv_key(0^64 || seq), through CFB of a zero block.
void make_cbc_iv(const CryptoEngine& e, const SaKeys& k, EspSeq seq, uint8_t iv[16]) {
  alignas(16) uint8_t counter[16] = {};
  alignas(16) static constexpr uint8_t kZero[16] = {};
  store_be64(counter + 8, seq.value());
  IMB_AES128_CFB_ONE(e.mgr(), iv, kZero, counter, k.iv_keys, 16);
}

// Header, IV (GCM), padding and trailer: everything but the encryption. Returns the
// ciphertext length.
uint32_t lay_out(const SaKeys& k, uint32_t spi, EspSeq seq, uint8_t next_header, uint8_t* esp,
                 uint32_t payload_len) {
  const Cipher c = k.cipher;
  store_be32(esp + wire::EspView::kSpiOff, spi);
  store_be32(esp + wire::EspView::kSeqOff, seq.low());
  uint8_t* payload = esp + esp_head_len(c);
  const uint32_t ct_len =
      round_up(payload_len + wire::EspView::kTrailerLen, static_cast<uint32_t>(pad_block(c)));
  const uint32_t pad_len = ct_len - payload_len - wire::EspView::kTrailerLen;
  for (uint32_t i = 0; i < pad_len; ++i) payload[payload_len + i] = static_cast<uint8_t>(i + 1);
  payload[ct_len - 2] = static_cast<uint8_t>(pad_len);
  payload[ct_len - 1] = next_header;
  return ct_len;
}

}  // namespace

uint32_t esp_seal(const CryptoEngine& e, const SaKeys& k, uint32_t spi, EspSeq seq, bool esn,
                  uint8_t next_header, uint8_t* esp, uint32_t payload_len) {
  if (!is_gcm(k.cipher)) {
    CbcHmacOp op;
    uint8_t tag[kIcvBytes];
    const uint32_t n =
        esp_seal_cbc_prepare(e, k, spi, seq, esn, next_header, esp, payload_len, op, tag);
    cbc_hmac_seal(e, std::span(&op, 1));
    esp_seal_cbc_finish(op);
    return n;
  }
  const uint32_t head = esp_head_len(k.cipher);
  const uint32_t ct_len = lay_out(k, spi, seq, next_header, esp, payload_len);
  uint8_t* iv = esp + wire::EspView::kHeaderLen;
  store_be64(iv, seq.value());
  uint8_t aad[12];
  const uint32_t aad_len = make_aad(spi, seq, esn, aad);
  std::span<uint8_t> seg(esp + head, ct_len);
  gcm_seal(e, k, iv, {aad, aad_len}, std::span(&seg, 1), esp + head + ct_len);
  return head + ct_len + static_cast<uint32_t>(kIcvBytes);
}

uint32_t esp_seal_cbc_prepare(const CryptoEngine& e, const SaKeys& k, uint32_t spi, EspSeq seq,
                              bool esn, uint8_t next_header, uint8_t* esp, uint32_t payload_len,
                              CbcHmacOp& op, uint8_t tag[kIcvBytes]) {
  const uint32_t head = esp_head_len(k.cipher);
  const uint32_t ct_len = lay_out(k, spi, seq, next_header, esp, payload_len);
  make_cbc_iv(e, k, seq, esp + wire::EspView::kHeaderLen);
  uint32_t auth_len = head + ct_len;
  if (esn) {
    // RFC 4303 2.2.1: the high half is authenticated after the ciphertext, not sent; it
    // sits where the ICV goes until the tag replaces it.
    store_be32(esp + head + ct_len, seq.high());
    auth_len += 4;
  }
  op = CbcHmacOp{&k, esp, auth_len, head, ct_len, esp + wire::EspView::kHeaderLen, tag};
  return head + ct_len + static_cast<uint32_t>(kIcvBytes);
}

void esp_seal_cbc_finish(const CbcHmacOp& op) {
  std::memcpy(op.buf + op.cipher_offset + op.cipher_len, op.tag, kIcvBytes);
}

namespace {

// The ciphertext length of an ESP packet of `len` bytes, or false when no such packet fits
// the cipher (shorter than one block, or not whole blocks).
bool ciphertext_len(Cipher c, uint32_t len, uint32_t& ct_len) {
  const uint32_t head = esp_head_len(c);
  const auto block = static_cast<uint32_t>(pad_block(c));
  if (len < head + block + kIcvBytes) return false;
  ct_len = len - head - static_cast<uint32_t>(kIcvBytes);
  return ct_len % block == 0;
}

// The trailer of a decrypted payload (RFC 4303 2.4-2.6).
OpenError read_trailer(uint32_t head, std::span<const uint8_t> plain, Opened& out) {
  auto t = wire::EspTrailer::parse(plain);
  if (!t || !wire::EspTrailer::padding_valid(plain, *t)) return OpenError::bad_padding;
  out.payload_off = head;
  out.payload_len = static_cast<uint32_t>(t->payload_len);
  out.next_header = t->next_header;
  return OpenError::none;
}

}  // namespace

OpenError esp_open_cbc_prepare(const SaKeys& k, EspSeq seq, bool esn, uint8_t* esp, uint32_t len,
                               CbcHmacOp& op, uint8_t received[kIcvBytes],
                               uint8_t computed[kIcvBytes]) {
  uint32_t ct_len = 0;
  if (!ciphertext_len(k.cipher, len, ct_len)) return OpenError::malformed;
  const uint32_t head = esp_head_len(k.cipher);
  uint8_t* icv = esp + head + ct_len;
  std::memcpy(received, icv, kIcvBytes);
  uint32_t auth_len = head + ct_len;
  if (esn) {
    // RFC 4303 2.2.1: the high half is authenticated after the ciphertext without being
    // sent; it takes the ICV's place (saved above) for the computation.
    store_be32(icv, seq.high());
    auth_len += 4;
  }
  op = CbcHmacOp{&k, esp, auth_len, head, ct_len, esp + wire::EspView::kHeaderLen, computed};
  return OpenError::none;
}

OpenError esp_open_cbc_finish(const CbcHmacOp& op, const uint8_t received[kIcvBytes], Opened& out) {
  if (!op.done || !constant_time_equal(op.tag, received, kIcvBytes)) {
    return OpenError::auth_failed;
  }
  const auto head = static_cast<uint32_t>(op.cipher_offset);
  return read_trailer(head, {op.buf + head, op.cipher_len}, out);
}

namespace {

// GCM's half of opening: the header, IV and ICV are at `esp` already; the ciphertext, in
// `ct`'s pieces (`ct_len` bytes), is decrypted to esp + esp_head_len().
OpenError open_gcm(const CryptoEngine& e, const SaKeys& k, EspSeq seq, bool esn, uint8_t* esp,
                   ConstSegments ct, uint32_t ct_len, Opened& out) {
  const uint32_t head = esp_head_len(k.cipher);
  uint8_t* payload = esp + head;
  const uint32_t spi = load_be32(esp + wire::EspView::kSpiOff);
  // The low half as received, so the AAD covers the header bytes themselves.
  seq = EspSeq::from_halves(seq.high(), load_be32(esp + wire::EspView::kSeqOff));
  uint8_t aad[12];
  const uint32_t aad_len = make_aad(spi, seq, esn, aad);
  if (!gcm_open(e, k, esp + wire::EspView::kHeaderLen, {aad, aad_len}, ct, payload,
                payload + ct_len)) {
    return OpenError::auth_failed;
  }
  return read_trailer(head, {payload, ct_len}, out);
}

}  // namespace

OpenError esp_open(const CryptoEngine& e, const SaKeys& k, EspSeq seq, bool esn, uint8_t* esp,
                   uint32_t len, Opened& out) {
  if (!is_gcm(k.cipher)) {
    CbcHmacOp op;
    uint8_t received[kIcvBytes];
    uint8_t computed[kIcvBytes];
    const OpenError err = esp_open_cbc_prepare(k, seq, esn, esp, len, op, received, computed);
    if (err != OpenError::none) return err;
    cbc_hmac_open(e, std::span(&op, 1));
    return esp_open_cbc_finish(op, received, out);
  }
  uint32_t ct_len = 0;
  if (!ciphertext_len(k.cipher, len, ct_len)) return OpenError::malformed;
  const std::span<const uint8_t> ct(esp + esp_head_len(k.cipher), ct_len);
  return open_gcm(e, k, seq, esn, esp, std::span(&ct, 1), ct_len, out);
}

OpenError esp_open(const CryptoEngine& e, const SaKeys& k, EspSeq seq, bool esn,
                   const PacketView& esp, uint8_t* dst, Opened& out) {
  const auto len = static_cast<uint32_t>(esp.size());
  uint32_t ct_len = 0;
  if (!is_gcm(k.cipher) || !ciphertext_len(k.cipher, len, ct_len)) {
    esp.copy_out(0, {dst, len});
    return esp_open(e, k, seq, esn, dst, len, out);
  }
  const uint32_t head = esp_head_len(k.cipher);
  esp.copy_out(0, {dst, head});
  esp.copy_out(head + ct_len, {dst + head + ct_len, kIcvBytes});
  std::array<PacketView::Segment, PacketView::kMaxSegments> pieces;
  const size_t n = esp.tail(head).first(ct_len).pieces(pieces);
  if (n == 0) return OpenError::malformed;  // more pieces than any received view holds
  return open_gcm(e, k, seq, esn, dst, {pieces.data(), n}, ct_len, out);
}

}  // namespace ws::ipsec
