#include "stack/wire/icmpv6.hpp"

#include <algorithm>

#include "stack/core/checksum.hpp"
#include "stack/wire/ipv6.hpp"

namespace ws::wire {

bool parse_ndp_options(std::span<const uint8_t> opts, NdpOptions& out) {
  size_t i = 0;
  while (i < opts.size()) {
    if (opts.size() - i < 2) return false;
    const size_t len = size_t{opts[i + 1]} * 8;
    if (len == 0 || len > opts.size() - i) return false;
    const uint8_t type = opts[i];
    if (type == kNdpOptSourceLinkAddr || type == kNdpOptTargetLinkAddr) {
      if (len != 8) return false;
      auto mac = MacAddr::from_bytes(opts.data() + i + 2);
      (type == kNdpOptSourceLinkAddr ? out.source_link : out.target_link) = mac;
    } else if (type == kNdpOptMtu) {
      if (len != 8) return false;
      out.mtu = load_be32(opts.data() + i + 4);
    } else if (type == kNdpOptPrefixInfo) {
      if (len != 32 || opts[i + 2] > 128) return false;
      ++out.prefixes;
    }
    i += len;
  }
  return true;
}

void emit_ndp_link_option(uint8_t* out, uint8_t type, const MacAddr& mac) {
  out[0] = type;
  out[1] = 1;
  mac.to_bytes(out + 2);
}

void fill_icmpv6_checksum(std::span<uint8_t> msg, const Ipv6Addr& src, const Ipv6Addr& dst) {
  msg[2] = 0;
  msg[3] = 0;
  uint32_t sum = ipv6_pseudo_sum(src, dst, kIpProtoIcmpv6, static_cast<uint32_t>(msg.size()));
  store_be16(msg.data() + 2, csum_fold(csum_partial(msg, sum)));
}

size_t emit_mldv2_report(uint8_t* out, std::span<const Ipv6Addr> groups) {
  std::fill(out, out + kMldv2ReportHeaderLen, uint8_t{0});
  out[0] = kIcmpv6Mldv2Report;
  store_be16(out + 6, static_cast<uint16_t>(groups.size()));
  uint8_t* r = out + kMldv2ReportHeaderLen;
  for (const auto& g : groups) {
    r[0] = kMldChangeToExclude;
    r[1] = 0;              // no auxiliary data
    store_be16(r + 2, 0);  // no sources: every source
    g.to_bytes(r + 4);
    r += kMldv2RecordLen;
  }
  return static_cast<size_t>(r - out);
}

void emit_router_alert_hop_by_hop(uint8_t* out, uint8_t next) {
  // RFC 2711: option type 5, length 2, value 0 (MLD); then a PadN of 2 bytes to fill 8.
  const uint8_t h[kRouterAlertHopByHopLen] = {next, 0, 5, 2, 0, 0, 1, 0};
  std::copy(h, h + kRouterAlertHopByHopLen, out);
}

}  // namespace ws::wire
