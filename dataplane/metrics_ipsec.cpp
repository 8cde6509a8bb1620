// IPsec metrics: wirespeed_ipsec_packets_total{sa,direction},
// wirespeed_ipsec_bytes_total{sa,direction} and wirespeed_ipsec_errors_total{sa,reason}, the
// reasons those of the SA's direction. Info entries describe each SA (never its key) for the
// status screen.
#include <cstdio>

#include "dataplane/metrics.hpp"

namespace ws::dp {

namespace {

using stats::MetricType;
using stats::Scope;

constexpr ipsec::SaError kInboundErrors[] = {ipsec::SaError::auth_failed, ipsec::SaError::replayed,
                                             ipsec::SaError::outside_window,
                                             ipsec::SaError::bad_padding};
constexpr ipsec::SaError kOutboundErrors[] = {ipsec::SaError::sequence_exhausted};

}  // namespace

bool Metrics::register_ipsec(const config::Config& cfg, std::string& error) {
  bool ok = true;
  auto must = [&](std::optional<stats::Slot> slot) {
    if (!slot) ok = false;
    return slot.value_or(stats::Slot{});
  };
  for (const auto& sa : cfg.ipsec.sas) {
    SaSlots ss;
    ss.direction = sa.direction;
    const std::string dir(ipsec::to_string(sa.direction));
    ss.packets =
        must(reg("wirespeed_ipsec_packets_total",
                 "ESP packets an SA sealed (outbound) or accepted (inbound).", MetricType::kCounter,
                 {{"sa", sa.name}, {"direction", dir}}, Scope::kPerCoreSum, error));
    ss.bytes = must(reg("wirespeed_ipsec_bytes_total",
                        "Bytes an SA protected: the inner packet (tunnel) or segment (transport).",
                        MetricType::kCounter, {{"sa", sa.name}, {"direction", dir}},
                        Scope::kPerCoreSum, error));
    std::span<const ipsec::SaError> reasons =
        sa.direction == ipsec::Direction::inbound
            ? std::span<const ipsec::SaError>(kInboundErrors)
            : std::span<const ipsec::SaError>(kOutboundErrors);
    for (ipsec::SaError e : reasons) {
      ss.errors.emplace_back(
          e,
          must(reg("wirespeed_ipsec_errors_total",
                   "ESP packets an SA refused (inbound) or could not send (outbound), by reason.",
                   MetricType::kCounter,
                   {{"sa", sa.name}, {"reason", std::string(ipsec::sa_error_name(e))}},
                   Scope::kPerCoreSum, error)));
    }
    sas_.push_back(std::move(ss));
    char spi[16];
    std::snprintf(spi, sizeof spi, "0x%08x", sa.spi);
    const std::string key = "ipsec.sa." + sa.name + ".";
    writer_.set_info(key + "direction", dir);
    writer_.set_info(key + "spi", spi);
    writer_.set_info(key + "mode", std::string(ipsec::to_string(sa.mode)));
    writer_.set_info(key + "cipher", std::string(ipsec::to_string(sa.cipher)));
    writer_.set_info(key + "peer", sa.remote.to_string());
  }
  return ok;
}

void Metrics::update_ipsec(uint64_t* v, const ipsec::EspLayer& esp) const {
  // The layer keeps each direction's SAs in config order.
  size_t out = 0, in = 0;
  for (const SaSlots& ss : sas_) {
    const ipsec::Sa* sa = nullptr;
    if (ss.direction == ipsec::Direction::outbound) {
      if (out < esp.outbound().size()) sa = esp.outbound()[out++].get();
    } else if (in < esp.inbound().size()) {
      sa = esp.inbound()[in++].get();
    }
    if (sa == nullptr) continue;
    v[ss.packets.offset] = sa->counters.packets;
    v[ss.bytes.offset] = sa->counters.bytes;
    for (const auto& [e, slot] : ss.errors) v[slot.offset] = sa->counters.get(e);
  }
}

}  // namespace ws::dp
