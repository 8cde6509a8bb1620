#include "stack/apps/udp_clients.hpp"

#include "stack/iface/stack.hpp"

namespace ws {

bool UdpSourceService::start(Stack& stack, Instant now) {
  stack_ = &stack;
  buf_.resize(p_.message_size);
  // Replies (an echo target) are counted and dropped.
  sock_ = stack.udp_bind(local_port_, [this](UdpSocket&, const UdpDatagram& d, Instant) {
    counters_.rx_bytes += d.payload.size();
    ++counters_.rx_messages;
  });
  begin(now);
  return sock_ != nullptr;
}

Instant UdpSourceService::poll(Instant now) {
  if (sock_ == nullptr || stopping_) return Instant::never();
  if (limits_reached(now)) {
    mark_stopping(now);
    return now;
  }
  // A bounded burst per poll keeps the core's receive side served.
  constexpr int kBurst = 64;
  uint64_t allowance = rate_allowance(now);
  for (int i = 0; i < kBurst && messages_ < allowance; ++i) {
    if (p_.count != 0 && messages_ >= p_.count) break;
    fill_pattern(messages_, 0, buf_);
    if (!sock_->send_to(p_.target, buf_, now)) {
      ++counters_.send_failures;
      break;  // out of buffers: retry on the next poll
    }
    ++messages_;
    ++counters_.tx_messages;
    counters_.tx_bytes += buf_.size();
    bytes_ += buf_.size();
  }
  return p_.rate == 0 ? now : now + Duration::micros(100);
}

void UdpSourceService::stop(Instant now) {
  mark_stopping(now);
  if (stack_ != nullptr && sock_ != nullptr) stack_->udp_unbind(local_port_);
  sock_ = nullptr;
}

bool UdpPingService::start(Stack& stack, Instant now) {
  stack_ = &stack;
  buf_.resize(p_.message_size);
  sock_ = stack.udp_bind(local_port_, [this](UdpSocket&, const UdpDatagram& d, Instant t) {
    counters_.rx_bytes += d.payload.size();
    ++counters_.rx_messages;
    // Only the echo of the datagram in flight counts; late echoes of timed-out
    // ones are ignored.
    if (!in_flight_ || d.payload.size() != buf_.size() ||
        check_pattern(seq_, 0, d.payload) != d.payload.size()) {
      return;
    }
    in_flight_ = false;
    hist_.record(static_cast<uint64_t>((t - sent_at_).ns()));
    ++messages_;
    bytes_ += buf_.size();
    ++seq_;
    send_next(t);
  });
  begin(now);
  if (sock_ == nullptr) return false;
  send_next(now);
  return true;
}

void UdpPingService::send_next(Instant now) {
  if (stopping_ || in_flight_) return;
  if (limits_reached(now)) {
    mark_stopping(now);
    return;
  }
  if (rate_allowance(now) <= messages_) return;
  fill_pattern(seq_, 0, buf_);
  if (!sock_->send_to(p_.target, buf_, now)) {
    ++counters_.send_failures;
    return;
  }
  ++counters_.tx_messages;
  counters_.tx_bytes += buf_.size();
  in_flight_ = true;
  sent_at_ = now;
}

Instant UdpPingService::poll(Instant now) {
  if (sock_ == nullptr) return Instant::never();
  if (in_flight_ && now - sent_at_ >= kTimeout) {
    in_flight_ = false;  // lost: count it and move on
    ++errors_;
    ++seq_;
  }
  send_next(now);
  if (stopping_) return Instant::never();
  return in_flight_ ? sent_at_ + kTimeout : now + Duration::millis(1);
}

void UdpPingService::fill(ClientReport& r) const { r.set_rtt(hist_); }

void UdpPingService::stop(Instant now) {
  mark_stopping(now);
  if (stack_ != nullptr && sock_ != nullptr) stack_->udp_unbind(local_port_);
  sock_ = nullptr;
}

}  // namespace ws
