#include "stack/ipsec/esp_layer.hpp"

#include "stack/ipsec/esp.hpp"

namespace ws::ipsec {

std::string_view sa_error_name(SaError e) {
  switch (e) {
    case SaError::auth_failed:
      return "auth_failed";
    case SaError::replayed:
      return "replayed";
    case SaError::outside_window:
      return "outside_window";
    case SaError::bad_padding:
      return "bad_padding";
    case SaError::sequence_exhausted:
      return "sequence_exhausted";
    case SaError::kCount:
      break;
  }
  return "unknown";
}

uint32_t Sa::wire_len(uint32_t inner_len) const {
  return esp_len(cipher, inner_len) + (mode == Mode::tunnel ? kOuterIpv4Len : 0);
}

uint32_t Sa::inner_mtu(uint32_t mtu) const {
  // Transport: outer header + ESP(L4); the inner "packet" is that header + L4.
  // Tunnel: outer header + ESP(inner IPv4 packet).
  if (mtu < kOuterIpv4Len) return 0;
  const uint32_t p = esp_max_payload(cipher, mtu - kOuterIpv4Len);
  return mode == Mode::transport ? (p == 0 ? 0 : kOuterIpv4Len + p) : p;
}

EspLayer::EspLayer() : rx_scratch_(kScratchLen), tx_scratch_(kScratchLen) {}
EspLayer::~EspLayer() = default;

namespace {

template <typename T>
T* named(const std::vector<std::unique_ptr<T>>& v, const std::string& name) {
  for (const auto& sa : v) {
    if (sa->name == name) return sa.get();
  }
  return nullptr;
}

void copy_common(const SaSpec& s, Sa& sa) {
  sa.name = s.name;
  sa.spi = s.spi;
  sa.mode = s.mode;
  sa.local = s.local;
  sa.remote = s.remote;
  sa.cipher = s.cipher;
  sa.esn = s.esn;
}

bool ports_match(const Policy& p, uint16_t local_port, uint16_t remote_port) {
  return (!p.local_port || *p.local_port == local_port) &&
         (!p.remote_port || *p.remote_port == remote_port);
}

}  // namespace

bool EspLayer::init(std::span<const SaSpec> sas, std::span<const PolicySpec> policies,
                    const std::string& state_dir, std::string& error,
                    std::vector<std::string>& warnings) {
  if (!engine_.ok()) {
    error = "intel-ipsec-mb: cannot allocate a multi-buffer manager";
    return false;
  }
  store_ = std::make_unique<SeqStore>(state_dir);
  for (const SaSpec& s : sas) {
    auto keys = make_sa_keys(engine_, s.cipher, s.key.bytes());
    if (!keys) {
      error = "SA '" + s.name + "': the key does not fit " + std::string(to_string(s.cipher));
      return false;
    }
    if (s.direction == Direction::outbound) {
      auto sa = std::make_unique<OutboundSa>(s.esn);
      copy_common(s, *sa);
      sa->keys = std::move(keys);
      sa->record = {s.spi, s.remote};
      sa->elsewhere = !s.here;
      std::string why;
      if (!sa->elsewhere && !store_->start(sa->record, sa->seq, why)) {
        sa->store_failed = true;
        warnings.push_back("SA '" + s.name + "' stopped: " + why);
      }
      outbound_.push_back(std::move(sa));
    } else {
      auto sa = std::make_unique<InboundSa>(s.replay_window, s.esn);
      copy_common(s, *sa);
      sa->keys = std::move(keys);
      inbound_.push_back(std::move(sa));
    }
  }
  for (const PolicySpec& p : policies) {
    Policy q{p.remote, p.protocol, p.local_port, p.remote_port, p.action, nullptr, nullptr};
    if (p.action == PolicyAction::protect) {
      q.outbound = named(outbound_, p.outbound_sa);
      q.inbound = named(inbound_, p.inbound_sa);
      if (q.outbound == nullptr || q.inbound == nullptr) {
        error = "a protect policy names an SA that does not exist in its direction";
        return false;
      }
    }
    policies_.push_back(q);
  }
  return true;
}

Decision EspLayer::lookup(ws::Ipv4Addr remote, uint8_t protocol, uint16_t local_port,
                          uint16_t remote_port) const {
  for (const Policy& p : policies_) {
    if (!p.remote.contains(remote) || (p.protocol != 0 && p.protocol != protocol)) continue;
    if (!ports_match(p, local_port, remote_port)) continue;
    return {p.action, p.outbound, p.inbound};
  }
  return {};
}

OutboundSa* EspLayer::may_protect(ws::Ipv4Addr remote, uint8_t protocol) const {
  for (const Policy& p : policies_) {
    if (!p.remote.contains(remote)) continue;
    if (p.protocol != 0 && protocol != 0 && p.protocol != protocol) continue;
    const bool surely = !p.local_port && !p.remote_port && (p.protocol == 0 || protocol != 0);
    if (p.action == PolicyAction::protect) return p.outbound;
    if (surely) return nullptr;
  }
  return nullptr;
}

InboundSa* EspLayer::find_inbound(uint32_t spi, ws::Ipv4Addr src, ws::Ipv4Addr dst) {
  for (const auto& sa : inbound_) {
    if (sa->spi == spi && sa->remote == src && sa->local == dst) return sa.get();
  }
  return nullptr;
}

bool EspLayer::path_mtu_reduced(ws::Ipv4Addr src, ws::Ipv4Addr dst, uint32_t spi, uint32_t mtu) {
  constexpr uint32_t kMinMtu = 576;
  for (const auto& sa : outbound_) {
    if (sa->spi != spi || sa->remote != dst || sa->local != src) continue;
    if (mtu < kMinMtu || (sa->path_mtu != 0 && mtu >= sa->path_mtu)) return false;
    sa->path_mtu = mtu;
    return true;
  }
  return false;
}

std::vector<std::string> EspLayer::refill() {
  std::vector<std::string> errors;
  for (const auto& sa : outbound_) {
    if (sa->store_failed || sa->elsewhere || !sa->seq.wants_more()) continue;
    std::string why;
    if (!store_->refill(sa->record, sa->seq, why)) {
      errors.push_back("SA '" + sa->name + "': " + why);
    }
  }
  return errors;
}

}  // namespace ws::ipsec
