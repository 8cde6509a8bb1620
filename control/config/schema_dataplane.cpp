// dataplane: EAL and per-core settings.
#include <sched.h>

#include <algorithm>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

// DPDK builds runtime paths from the prefix (/var/run/dpdk/<prefix>/...), so keep it to
// characters that are safe in a path component.
bool valid_file_prefix(std::string_view s) {
  if (s.empty() || s.size() > 64 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

// RTE_MAX_LCORE in Debian's DPDK 22.11 build is 128.
constexpr uint64_t kMaxLcore = 127;

// The CPUs this process may run on (its affinity: a container's cpuset, taskset), less the
// first when there are more than two, which is left to the OS and the control process.
std::vector<uint32_t> auto_lcores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<uint32_t> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (uint32_t c = 0; c <= kMaxLcore; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.size() > 2) cpus.erase(cpus.begin());
  return cpus;
}

void parse_lcores(Diagnostics& d, const Value& v, DataplaneConfig& dp) {
  std::vector<uint32_t>& out = dp.lcores;
  if (v.node.IsScalar() && v.node.Scalar() == "auto") {
    out = auto_lcores();
    dp.lcores_auto = true;
    if (out.empty()) d.error(v.pos, v.path + ": auto found no CPU this process may run on");
    return;
  }
  auto items = read_list(d, v);
  if (!items) return;
  if (items->empty()) {
    d.error(v.pos, v.path + ": at least one lcore is required");
    return;
  }
  std::vector<uint32_t> lcores;
  bool ok = true;
  for (const auto& item : *items) {
    auto n = read_uint(d, item, 0, kMaxLcore);
    if (!n) {
      ok = false;
      continue;
    }
    if (std::find(lcores.begin(), lcores.end(), *n) != lcores.end()) {
      d.error(item.pos, item.path + ": lcore " + std::to_string(*n) + " is listed twice");
      ok = false;
      continue;
    }
    lcores.push_back(static_cast<uint32_t>(*n));
  }
  if (ok) out = std::move(lcores);
}

void parse_eal_args(Diagnostics& d, const Value& v, std::vector<std::string>& out) {
  auto items = read_list(d, v);
  if (!items) return;
  std::vector<std::string> args;
  for (const auto& item : *items) {
    if (auto s = read_string(d, item)) args.push_back(std::move(*s));
  }
  out = std::move(args);
}

}  // namespace

void parse_dataplane(const MapView& m, DataplaneConfig& out, Origins& origins) {
  Diagnostics& d = m.diag();
  if (auto v = m.get("lcores")) parse_lcores(d, *v, out);
  m.enumeration<IdleMode>("idle", out.idle,
                          {{"adaptive", IdleMode::adaptive}, {"poll", IdleMode::poll}});
  if (auto v = m.get("file_prefix")) {
    if (auto s = read_string(d, *v)) {
      if (valid_file_prefix(*s)) {
        out.file_prefix = *s;
      } else {
        d.error(v->pos, v->path + ": '" + *s +
                            "' is not a valid prefix (1..64 of A-Z a-z 0-9 - _ ., not starting "
                            "with '.')");
      }
    }
  }
  m.boolean("hugepages", out.hugepages);
  m.uint("memory_mb", 64, 1048576, out.memory_mb);
  if (auto v = m.get("eal_args")) parse_eal_args(d, *v, out.eal_args);
  m.uint("stats_interval_ms", 10, 60000, out.stats_interval_ms);
  m.uint("heap_reserve_mb", 0, 1024, out.heap_reserve_mb);
  if (m.uint("mbufs", 512, 16777215, out.mbufs)) origins.mbufs = m.get("mbufs")->pos;
  m.enumeration<Offloads>("offloads", out.offloads,
                          {{"auto", Offloads::automatic}, {"software", Offloads::software}});
  if (auto v = m.get("faults")) {
    MapView fm(d, *v,
               {"seed", "loss_ppm", "duplicate_ppm", "corrupt_ppm", "reorder_ppm", "delay_us",
                "tx_loss_ppm"});
    if (fm.is_map()) {
      auto& fc = out.faults;
      fm.uint("seed", 0, UINT64_MAX, fc.seed);
      fm.uint("loss_ppm", 0, 1000000, fc.loss_ppm);
      fm.uint("duplicate_ppm", 0, 1000000, fc.duplicate_ppm);
      fm.uint("corrupt_ppm", 0, 1000000, fc.corrupt_ppm);
      fm.uint("reorder_ppm", 0, 1000000, fc.reorder_ppm);
      fm.uint("delay_us", 0, 1000000, fc.delay_us);
      fm.uint("tx_loss_ppm", 0, 1000000, fc.tx_loss_ppm);
    }
  }
}

}  // namespace ws::config::detail
