#include "stack/apps/udp_services.hpp"

#include "stack/iface/stack.hpp"

namespace ws {

bool UdpEchoService::start(Stack& stack, Instant now) {
  (void)now;
  stack_ = &stack;
  // RFC 862: send back every datagram, unchanged, to its source.
  return stack.udp_bind(port_, [this](UdpSocket& s, const UdpDatagram& d, Instant t) {
    ++counters_.rx_messages;
    counters_.rx_bytes += d.payload.size();
    if (s.send_to(d.src, d.payload, t)) {
      ++counters_.tx_messages;
      counters_.tx_bytes += d.payload.size();
    } else {
      ++counters_.send_failures;
    }
  }) != nullptr;
}

void UdpEchoService::stop(Instant now) {
  (void)now;
  if (stack_ != nullptr) stack_->udp_unbind(port_);
  stack_ = nullptr;
}

bool UdpSinkService::start(Stack& stack, Instant now) {
  (void)now;
  stack_ = &stack;
  // RFC 863: discard, but count what arrived; a receive burst's datagrams in one call.
  UdpSocket::BurstHandler count = [this](UdpSocket&, std::span<const UdpDatagram> run, Instant) {
    counters_.rx_messages += run.size();
    for (const UdpDatagram& d : run) counters_.rx_bytes += d.payload.size();
  };
  return stack.udp_bind(port_, std::move(count)) != nullptr;
}

void UdpSinkService::stop(Instant now) {
  (void)now;
  if (stack_ != nullptr) stack_->udp_unbind(port_);
  stack_ = nullptr;
}

}  // namespace ws
