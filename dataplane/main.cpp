// wirespeed-dataplane: the DPDK primary process. Flags: docs/config.md.
#include <getopt.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_version.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "control/config/config.hpp"
#include "control/stats/path.hpp"
#include "dataplane/eal_args.hpp"
#include "dataplane/heap.hpp"
#include "dataplane/metrics.hpp"
#include "dataplane/pipeline.hpp"
#include "dataplane/port.hpp"
#include "dataplane/telemetry.hpp"
#include "ws_version.h"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

void usage(FILE* f) {
  std::fprintf(f,
               "usage: wirespeed-dataplane -c FILE [--check]\n"
               "       wirespeed-dataplane --help | --version\n\n"
               "  -c, --config FILE  the YAML config (see configs/ and docs/config.md)\n"
               "      --check        validate the config only: exit 0, or 1 with every error\n"
               "                     as FILE:LINE:COL: message\n"
               "  -h, --help         this text\n"
               "  -V, --version      version and the DPDK version it runs on\n\n"
               "Runs until SIGINT/SIGTERM, then stops ports, closes connections, exits 0.\n");
}

struct Worker {
  ws::dp::Pipeline* pipeline;
};

int worker_main(void* arg) {
  auto* w = static_cast<Worker*>(arg);
  w->pipeline->run(false);
  return 0;
}

// -1 to go on with `config_path` (and `check`), else the exit status.
int parse_args(int argc, char** argv, std::string& config_path, bool& check) {
  static const option kOpts[] = {{"config", required_argument, nullptr, 'c'},
                                 {"check", no_argument, nullptr, 'k'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {"version", no_argument, nullptr, 'V'},
                                 {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "c:hV", kOpts, nullptr)) != -1) {
    switch (c) {
      case 'c':
        config_path = optarg;
        break;
      case 'k':
        check = true;
        break;
      case 'h':
        usage(stdout);
        return 0;
      case 'V':
        std::printf("wirespeed-dataplane %s (%s; built against DPDK %s)\n", WS_VERSION,
                    rte_version(), WS_DPDK_VERSION);
        return 0;
      default:
        usage(stderr);
        return 1;
    }
  }
  if (config_path.empty() || optind != argc) {
    std::fprintf(stderr, "wirespeed-dataplane: -c FILE is required\n");
    usage(stderr);
    return 1;
  }
  return -1;
}

bool start_eal(const ws::config::Config& cfg, const char* argv0) {
  auto args = ws::dp::build_eal_args(cfg, argv0);
  std::vector<char*> eal_argv;
  eal_argv.reserve(args.size() + 1);
  for (auto& a : args) eal_argv.push_back(a.data());
  eal_argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(args.size()), eal_argv.data()) < 0) {
    std::fprintf(stderr, "wirespeed-dataplane: dataplane: EAL initialisation failed: %s\n",
                 rte_strerror(rte_errno));
    return false;
  }
  return true;
}

bool setup_ports(const ws::config::Config& cfg, std::vector<ws::dp::PortInfo>& ports) {
  for (size_t i = 0; i < cfg.ports.size(); ++i) {
    std::string err;
    if (!ws::dp::port_setup(cfg, i, ports[i], err)) {
      std::fprintf(stderr, "wirespeed-dataplane: %s\n", err.c_str());
      return false;
    }
    const auto& p = ports[i];
    std::printf(
        "wirespeed: port %s: %s (%s) mac %s address %s mtu %u, %u rx / %u tx queues, mbuf data "
        "room %u, tx checksum offload ip=%d udp=%d tcp=%d, rx checksum flags %d%s%s\n",
        p.name.c_str(), p.device.c_str(), p.driver.c_str(), p.mac.to_string().c_str(),
        cfg.ports[i].address.to_string().c_str(), p.mtu, p.rx_queues, p.tx_queues, p.data_room,
        p.tx_offloads.ipv4_cksum, p.tx_offloads.udp_cksum, p.tx_offloads.tcp_cksum, p.rx_cksum,
        p.note.empty() ? "" : "; ", p.note.c_str());
  }
  return true;
}

// Metrics and packet capture: the data plane runs without either when it cannot have them,
// but the operator must know.
void start_observers(const ws::config::Config& cfg, const std::vector<ws::dp::PortInfo>& ports,
                     ws::dp::Metrics& metrics, ws::dp::Capture& capture) {
  std::string err;
  if (!metrics.init(cfg, ports, err)) {
    std::fprintf(stderr, "wirespeed: warning: metrics disabled: %s\n", err.c_str());
  } else {
    ws::dp::register_telemetry(ws::stats::segment_path(cfg.dataplane.file_prefix));
  }
  err.clear();
  auto n = static_cast<uint32_t>(cfg.dataplane.lcores.size());
  if (!capture.init(ws::stats::capture_path(cfg.dataplane.file_prefix), n, ports, err)) {
    std::fprintf(stderr, "wirespeed: warning: packet capture unavailable: %s\n", err.c_str());
  }
  ws::dp::enable_pdump(cfg);
}

// One pipeline per lcore, each started (its services bound); false when one cannot start.
bool start_pipelines(const ws::config::Config& cfg, const std::vector<ws::dp::PortInfo>& ports,
                     const ws::dp::PipelineShared& shared,
                     std::vector<std::unique_ptr<ws::dp::Pipeline>>& pipelines) {
  for (uint32_t i = 0; i < cfg.dataplane.lcores.size(); ++i) {
    pipelines.push_back(std::make_unique<ws::dp::Pipeline>(i, cfg, ports, shared));
    std::string err;
    if (!pipelines.back()->start(err)) {
      std::fprintf(stderr, "wirespeed-dataplane: %s\n", err.c_str());
      pipelines.clear();
      return false;
    }
  }
  std::printf("wirespeed: running %zu pipeline(s) on lcores", pipelines.size());
  for (uint32_t l : cfg.dataplane.lcores) std::printf(" %u", l);
  std::printf(", idle %s; stop with SIGINT or SIGTERM\n",
              std::string(ws::config::to_string(cfg.dataplane.idle)).c_str());
  std::fflush(stdout);
  return true;
}

// Until SIGINT or SIGTERM. The main lcore is the first in the list and runs pipeline 0
// itself.
void run_pipelines(const ws::config::Config& cfg,
                   std::vector<std::unique_ptr<ws::dp::Pipeline>>& pipelines) {
  std::vector<Worker> workers(pipelines.size());
  for (size_t i = 1; i < pipelines.size(); ++i) {
    workers[i].pipeline = pipelines[i].get();
    rte_eal_remote_launch(worker_main, &workers[i], cfg.dataplane.lcores[i]);
  }
  pipelines[0]->run(true);
  rte_eal_mp_wait_lcore();
  for (auto& p : pipelines) p->finish();
  pipelines.clear();
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  bool check = false;
  if (int rc = parse_args(argc, argv, config_path, check); rc >= 0) return rc;
  auto loaded = ws::config::load_config_file(config_path);
  if (!loaded.config) {
    for (const auto& e : loaded.errors) std::fprintf(stderr, "%s\n", e.format().c_str());
    return 1;
  }
  const ws::config::Config& cfg = *loaded.config;
  if (check) {
    std::printf("%s: ok\n%s\n", config_path.c_str(), ws::config::describe(cfg).c_str());
    return 0;
  }
  ws::dp::keep_heap();
  if (!start_eal(cfg, argv[0])) return 1;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  std::vector<ws::dp::PortInfo> ports(cfg.ports.size());
  auto cleanup = [&](int rc) {
    for (auto& p : ports) ws::dp::port_teardown(p);
    rte_eal_cleanup();
    return rc;
  };
  if (!setup_ports(cfg, ports)) return cleanup(1);
  ws::dp::Metrics metrics;
  ws::dp::Capture capture;
  start_observers(cfg, ports, metrics, capture);
  ws::dp::Steering steering;
  std::string err;
  if (!steering.init(cfg, ports, err)) {
    std::fprintf(stderr, "wirespeed-dataplane: %s\n", err.c_str());
    metrics.shutdown();
    capture.shutdown();
    return cleanup(1);
  }
  for (const auto& p : ports) {
    if (steering.active() && steering.steered(p.port_id))
      std::printf("wirespeed: port %s: software RSS: frames go to the core that owns their flow\n",
                  p.name.c_str());
  }
  ws::dp::ClientReports client_reports(cfg.services.size(),
                                       static_cast<uint32_t>(cfg.dataplane.lcores.size()));
  ws::dp::PipelineShared shared{metrics, capture, steering, client_reports, g_stop};
  std::vector<std::unique_ptr<ws::dp::Pipeline>> pipelines;
  const bool started = start_pipelines(cfg, ports, shared, pipelines);
  if (started) run_pipelines(cfg, pipelines);
  steering.shutdown();
  metrics.shutdown();
  capture.shutdown();
  if (!started) return cleanup(1);
  std::printf("wirespeed: stopped\n");
  return cleanup(0);
}
