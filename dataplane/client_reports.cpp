#include "dataplane/client_reports.hpp"

#include <algorithm>

#include "stack/core/json.hpp"

namespace ws::dp {

ClientReports::ClientReports(size_t services, uint32_t cores) : entries_(services) {
  for (auto& e : entries_) e.shares.resize(cores);
}

void ClientReports::join(size_t service, uint32_t core) {
  std::lock_guard<std::mutex> g(mu_);
  Entry& e = entries_[service];
  if (!e.any || core < e.reporter) e.reporter = core;
  e.any = true;
  e.shares[core].joined = true;
}

bool ClientReports::reporter(size_t service, uint32_t core) const {
  std::lock_guard<std::mutex> g(mu_);
  return entries_[service].any && entries_[service].reporter == core;
}

void ClientReports::post(size_t service, uint32_t core, const ClientReport& r,
                         const LatencyHistogram* rtt) {
  std::lock_guard<std::mutex> g(mu_);
  Entry& e = entries_[service];
  Share& s = e.shares[core];
  s.posted = true;
  s.last = r;
  if (rtt != nullptr) s.rtt = *rtt;
  if (core == e.reporter && !r.final) e.progress_due = true;
}

// Totals add up; a final report's time is the longest share's and its rates are over
// that time; progress rates add up (each is over the share's last second).
ClientReport ClientReports::sum(const Entry& e) {
  ClientReport out;
  out.final = true;
  LatencyHistogram rtt;
  for (const Share& s : e.shares) {
    if (!s.joined) continue;
    const ClientReport& r = s.last;
    out.final = out.final && s.posted && r.final;
    out.seconds = std::max(out.seconds, r.seconds);
    out.messages += r.messages;
    out.bytes += r.bytes;
    out.connections += r.connections;
    out.connect_failures += r.connect_failures;
    out.errors += r.errors;
    out.messages_per_second += r.messages_per_second;
    out.bits_per_second += r.bits_per_second;
    out.connections_per_second += r.connections_per_second;
    out.has_rtt = out.has_rtt || r.has_rtt;
    rtt.merge(s.rtt);
  }
  if (out.final) {
    const double secs = std::max(1e-9, out.seconds);
    out.messages_per_second = static_cast<double>(out.messages) / secs;
    out.bits_per_second = static_cast<double>(out.bytes) * 8 / secs;
    out.connections_per_second = static_cast<double>(out.connections) / secs;
  }
  if (out.has_rtt) out.set_rtt(rtt);
  return out;
}

bool ClientReports::merged(size_t service, ClientReport& out) {
  std::lock_guard<std::mutex> g(mu_);
  Entry& e = entries_[service];
  if (!e.any || e.final_done) return false;
  ClientReport r = sum(e);
  if (r.final) {
    e.final_done = true;
  } else if (!e.progress_due) {
    return false;
  }
  e.progress_due = false;
  out = r;
  return true;
}

bool ClientReports::all_final() const {
  std::lock_guard<std::mutex> g(mu_);
  bool any = false;
  for (const Entry& e : entries_) {
    if (!e.any) continue;
    any = true;
    if (!e.final_done) return false;
  }
  return any;
}

namespace {
json::Json report_doc(const ClientReportInfo& info, const ClientReport& r) {
  json::Json j = {{"service", info.name},
                  {"kind", info.kind},
                  {"protocol", info.protocol},
                  {"messages", r.messages},
                  {"bytes", r.bytes},
                  {"seconds", r.seconds},
                  {"messages_per_second", r.messages_per_second},
                  {"bits_per_second", r.bits_per_second},
                  {"message_size", info.message_size},
                  {"connections", r.connections},
                  {"connections_per_second", r.connections_per_second},
                  {"connect_failures", r.connect_failures},
                  {"errors", r.errors}};
  if (r.has_rtt) {
    auto us = [&r](int i) { return static_cast<double>(r.rtt_ns[i]) / 1e3; };
    j["rtt_us"] = {{"p50", us(0)}, {"p90", us(1)}, {"p99", us(2)}, {"p999", us(3)}, {"max", us(4)}};
  }
  return j;
}
}  // namespace

std::string client_report_json(const ClientReportInfo& info, const ClientReport& r) {
  return json::dump(report_doc(info, r));
}

bool write_client_report(const std::string& path, const ClientReportInfo& info,
                         const ClientReport& r) {
  return json::write_file(path, report_doc(info, r));
}

}  // namespace ws::dp
