#include "stack/apps/udp_clients.hpp"

#include "stack/iface/stack.hpp"

namespace ws {

bool UdpClientService::bind(Stack& stack, Instant now) {
  stack_ = &stack;
  size_ = p_.message_size;
  constexpr size_t kBatch = 64;
  constexpr size_t kBatchBytes = size_t{256} * 1024;
  const size_t batch = std::clamp<size_t>(kBatchBytes / std::max<size_t>(size_, 1), 1, kBatch);
  batch_.assign(std::max<size_t>(batch * size_, 1), 0);
  views_.resize(batch);
  sock_ = stack.udp_bind(local_port_, [this](UdpSocket&, const UdpDatagram& d, Instant t) {
    counters_.rx_bytes += d.payload.size();
    ++counters_.rx_messages;
    on_reply(d, t);
  });
  begin(now);
  return sock_ != nullptr;
}

size_t UdpClientService::send_messages(uint64_t first_seq, size_t n, Instant now) {
  n = std::min(n, views_.size());
  for (size_t i = 0; i < n; ++i) {
    std::span<uint8_t> m(batch_.data() + i * size_, size_);
    fill_pattern(first_seq + i, 0, m);
    views_[i] = m;
  }
  const size_t sent = sock_->send_burst(p_.target, std::span(views_).first(n), now);
  if (sent < n) ++counters_.send_failures;
  counters_.tx_messages += sent;
  counters_.tx_bytes += sent * size_;
  return sent;
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
  // A bounded burst per poll keeps the core's receive side served; the datagrams go in
  // one send (UdpSocket::send_burst).
  const uint64_t allowance = rate_allowance(now);
  uint64_t n = allowance > messages_ ? allowance - messages_ : 0;
  if (p_.count != 0) n = std::min(n, p_.count - std::min(p_.count, messages_));
  if (n != 0) {
    // Out of buffers: what was not sent goes on the next poll.
    const size_t sent =
        send_messages(messages_, static_cast<size_t>(std::min<uint64_t>(n, 64)), now);
    messages_ += sent;
    bytes_ += sent * message_size();
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
