#include "stack/apps/udp_clients.hpp"

#include "stack/iface/stack.hpp"

namespace ws {

bool UdpClientService::bind(Stack& stack, Instant now) {
  stack_ = &stack;
  buf_.resize(p_.message_size);
  sock_ = stack.udp_bind(local_port_, [this](UdpSocket&, const UdpDatagram& d, Instant t) {
    counters_.rx_bytes += d.payload.size();
    ++counters_.rx_messages;
    on_reply(d, t);
  });
  begin(now);
  return sock_ != nullptr;
}

bool UdpClientService::send_message(uint64_t seq, Instant now) {
  fill_pattern(seq, 0, buf_);
  if (!sock_->send_to(p_.target, buf_, now)) {
    ++counters_.send_failures;
    return false;
  }
  ++counters_.tx_messages;
  counters_.tx_bytes += buf_.size();
  return true;
}

void UdpClientService::stop(Instant now) {
  mark_stopping(now);
  if (stack_ != nullptr && sock_ != nullptr) stack_->udp_unbind(local_port_);
  sock_ = nullptr;
}

bool UdpSourceService::start(Stack& stack, Instant now) {
  // Replies (an echo target) are counted and dropped.
  return bind(stack, now);
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
    if (!send_message(messages_, now)) break;  // out of buffers: retry on the next poll
    ++messages_;
    bytes_ += message_size();
  }
  return p_.rate == 0 ? now : now + Duration::micros(100);
}

bool UdpPingService::start(Stack& stack, Instant now) {
  if (!bind(stack, now)) return false;
  send_next(now);
  return true;
}

void UdpPingService::on_reply(const UdpDatagram& d, Instant now) {
  // Only the echo of the datagram in flight counts; late echoes of timed-out
  // ones are ignored.
  if (!in_flight_ || d.payload.size() != message_size() ||
      check_pattern(seq_, 0, d.payload) != d.payload.size()) {
    return;
  }
  in_flight_ = false;
  hist_.record(static_cast<uint64_t>((now - sent_at_).ns()));
  ++messages_;
  bytes_ += message_size();
  ++seq_;
  send_next(now);
}

void UdpPingService::send_next(Instant now) {
  if (stopping_ || in_flight_) return;
  if (limits_reached(now)) {
    mark_stopping(now);
    return;
  }
  if (rate_allowance(now) <= messages_) return;
  if (!send_message(seq_, now)) return;
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

}  // namespace ws
