#include "stack/apps/client.hpp"

#include <algorithm>

namespace ws {

void ClientService::begin(Instant now) {
  start_ = now;
  last_report_ = now;
  next_report_ = now + Duration::seconds(1);
}

bool ClientService::limits_reached(Instant now) const {
  if (p_.duration > Duration::zero() && now - start_ >= p_.duration) return true;
  if (p_.count != 0 && messages_ >= p_.count) return true;
  return false;
}

uint64_t ClientService::rate_allowance(Instant now) const {
  if (p_.rate == 0) return UINT64_MAX;
  // One message at once, then rate x elapsed: a fixed schedule, not a
  // catch-up-forever bucket, so a stall does not turn into a burst.
  double elapsed = (now - start_).secs();
  return 1 + static_cast<uint64_t>(elapsed * static_cast<double>(p_.rate));
}

bool ClientService::report(Instant now, ClientReport& out) {
  if (final_sent_) return false;
  bool final = stopping_ && (drained(now) || now - stop_at_ >= p_.linger);
  if (!final && now < next_report_) return false;
  out = ClientReport{};
  fill(out);
  out.final = final;
  out.seconds = (now - start_).secs();
  out.messages = messages_;
  out.bytes = bytes_;
  out.connections = opened_;
  out.connect_failures = connect_failures_;
  out.errors = errors_;
  if (final) {
    // The run ends when sending stopped, not when the last close completed.
    double s = std::max(1e-9, ((stopping_ ? stop_at_ : now) - start_).secs());
    out.seconds = s;
    out.messages_per_second = static_cast<double>(messages_) / s;
    out.bits_per_second = static_cast<double>(bytes_) * 8 / s;
    out.connections_per_second = static_cast<double>(opened_) / s;
    final_sent_ = true;
  } else {
    double s = std::max(1e-9, (now - last_report_).secs());
    out.messages_per_second = static_cast<double>(messages_ - last_messages_) / s;
    out.bits_per_second = static_cast<double>(bytes_ - last_bytes_) * 8 / s;
    // Over the last interval like the other rates (it was the average since the start,
    // which the stability benchmark read as per-second rates: a decline showed only as a
    // slowly falling average).
    out.connections_per_second = static_cast<double>(opened_ - last_opened_) / s;
    last_report_ = now;
    last_messages_ = messages_;
    last_bytes_ = bytes_;
    last_opened_ = opened_;
    next_report_ = now + Duration::seconds(1);
  }
  return true;
}

}  // namespace ws
