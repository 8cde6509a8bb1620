#include "tools/wsperf/report.hpp"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "stack/core/json.hpp"

namespace wsperf {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

size_t Histogram::index(uint64_t v) {
  if (v < kSub) return static_cast<size_t>(v);
  const int e = 63 - std::countl_zero(v);  // >= 6
  const uint64_t sub = (v >> (e - 6)) & (kSub - 1);
  return static_cast<size_t>(e - 5) * kSub + static_cast<size_t>(sub);
}

uint64_t Histogram::upper(size_t i) {
  if (i < kSub) return i;
  const int e = static_cast<int>(i / kSub) + 5;
  const uint64_t sub = i % kSub;
  const uint64_t lower = (kSub + sub) << (e - 6);
  return lower + ((uint64_t{1} << (e - 6)) - 1);
}

void Histogram::add(uint64_t ns) {
  ++buckets_[index(ns)];
  ++count_;
  if (ns > max_) max_ = ns;
}

uint64_t Histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  // The smallest bucket whose cumulative count reaches q of the samples.
  const double want = q * static_cast<double>(count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (buckets_[i] != 0 && static_cast<double>(seen) >= want) {
      const uint64_t u = upper(i);
      return u < max_ ? u : max_;
    }
  }
  return max_;
}

void Reporter::start(uint64_t now) {
  start_ = now;
  last_time_ = now;
  next_ = now + 1000000000ull;
}

namespace {

std::string rate_text(double bits_per_s) {
  char buf[64];
  if (bits_per_s >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f Gbit/s", bits_per_s / 1e9);
  } else if (bits_per_s >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f Mbit/s", bits_per_s / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f kbit/s", bits_per_s / 1e3);
  }
  return buf;
}

double safe_div(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace

std::string Reporter::line(double seconds, double interval, uint64_t messages,
                           uint64_t bytes) const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %.1f s, %" PRIu64 " messages, %s, %.0f msg/s",
                role_name(opt_.role), seconds, messages,
                rate_text(safe_div(static_cast<double>(bytes) * 8, interval)).c_str(),
                safe_div(static_cast<double>(messages), interval));
  return buf;
}

uint64_t Reporter::tick(uint64_t now, const Counters& c) {
  if (now < next_) return next_;
  const double interval = static_cast<double>(now - last_time_) / 1e9;
  // Progress lines: totals so far, rates over the last interval. Servers stay
  // quiet while nothing arrives.
  const bool idle = c.bytes == last_.bytes && c.messages == last_.messages;
  if (!opt_.quiet && !(idle && !opt_.client())) {
    std::string l =
        line(static_cast<double>(now - start_) / 1e9, interval, c.messages, c.bytes - last_.bytes);
    // The rate part must use the interval's messages, not the total.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f msg/s",
                  safe_div(static_cast<double>(c.messages - last_.messages), interval));
    l = l.substr(0, l.rfind(", ") + 2) + buf;
    std::printf("%s\n", l.c_str());
    std::fflush(stdout);
  }
  last_ = c;
  last_time_ = now;
  while (next_ <= now) next_ += 1000000000ull;
  return next_;
}

bool Reporter::finish(uint64_t first, uint64_t last, const Counters& c, const Histogram* rtt) {
  const double seconds = last > first ? static_cast<double>(last - first) / 1e9 : 0.0;
  const double mps = safe_div(static_cast<double>(c.messages), seconds);
  const double bps = safe_div(static_cast<double>(c.bytes) * 8, seconds);
  const double cps = safe_div(static_cast<double>(c.connections), seconds);
  std::string l = line(seconds, seconds, c.messages, c.bytes);
  char buf[256];
  if (rtt != nullptr) {
    std::snprintf(buf, sizeof buf, ", rtt p50 %.1f us, p99 %.1f us, max %.1f us",
                  static_cast<double>(rtt->quantile(0.5)) / 1e3,
                  static_cast<double>(rtt->quantile(0.99)) / 1e3,
                  static_cast<double>(rtt->max()) / 1e3);
    l += buf;
  }
  if (opt_.reconnect) {
    std::snprintf(buf, sizeof buf, ", %.0f conn/s", cps);
    l += buf;
  }
  if (c.lost != 0) l += ", " + std::to_string(c.lost) + " lost";
  if (opt_.verify) l += ", " + std::to_string(c.verify_errors) + " verify errors";
  if (c.protocol_errors != 0) l += ", " + std::to_string(c.protocol_errors) + " protocol errors";
  std::printf("%s\n", l.c_str());
  std::fflush(stdout);

  if (opt_.report.empty()) return true;
  ws::json::Json j = {{"role", role_name(opt_.role)},
                      {"protocol", opt_.udp ? "udp" : "tcp"},
                      {"framing", opt_.framing == ws::Framing::kNone ? "none" : "length32"},
                      {"address", opt_.addr_text},
                      {"message_size", opt_.client() ? opt_.message_size : uint64_t{0}},
                      {"connections", c.connections},
                      {"messages", c.messages},
                      {"bytes", c.bytes},
                      {"stream_bytes", c.stream_bytes},
                      {"seconds", seconds},
                      {"messages_per_second", mps},
                      {"bits_per_second", bps},
                      {"verify", opt_.verify},
                      {"verify_errors", c.verify_errors},
                      {"protocol_errors", c.protocol_errors},
                      {"truncated", c.truncated},
                      {"lost", c.lost},
                      {"send_errors", c.send_errors},
                      {"drops", c.drops}};
  if (opt_.reconnect) j["connections_per_second"] = cps;
  if (rtt != nullptr) {
    auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1e3; };
    j["rtt_us"] = {{"p50", us(rtt->quantile(0.5))},  {"p90", us(rtt->quantile(0.9))},
                   {"p99", us(rtt->quantile(0.99))}, {"p999", us(rtt->quantile(0.999))},
                   {"max", us(rtt->max())},          {"samples", rtt->count()}};
  }
  if (ws::json::write_file(opt_.report, j)) return true;
  std::fprintf(stderr, "wsperf: cannot write report %s\n", opt_.report.c_str());
  return false;
}

}  // namespace wsperf
