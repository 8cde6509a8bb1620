#include "control/cli/health.hpp"

namespace ws::cli {

Health::Health(std::string segment_path, stats::ReaderOptions options)
    : reader_(std::move(segment_path), options) {}

HealthAnswer Health::healthz() { return judge(false); }
HealthAnswer Health::readyz() { return judge(true); }

HealthAnswer Health::judge(bool need_links) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats::Liveness l = reader_.refresh();
  if (l != stats::Liveness::kLive) {
    return {503, "data plane " + std::string(stats::to_string(l)) + "\n"};
  }
  if (!need_links) return {200, "data plane live\n"};
  stats::Snapshot snap;
  if (!reader_.read(&snap) || !snap.catalog) return {503, "stats segment unreadable\n"};
  std::string down;
  for (const auto& m : snap.catalog->metrics) {
    if (m.name != "wirespeed_port_link_up" || snap.value(m) != 0) continue;
    down += (down.empty() ? "" : ", ") + std::string(m.label("port"));
  }
  if (!down.empty()) return {503, "link down: " + down + "\n"};
  return {200, "data plane live, every link up\n"};
}

}  // namespace ws::cli
