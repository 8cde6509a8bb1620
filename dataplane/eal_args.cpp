#include "dataplane/eal_args.hpp"

#include <charconv>

namespace ws::dp {

std::string port_device_name(const config::PortConfig& p) {
  if (!p.pci.empty()) return p.pci;
  return p.device.substr(0, p.device.find(','));
}

uint32_t devarg_u32(std::string_view device, std::string_view key) {
  // Arguments follow the device name, each after a comma.
  size_t pos = device.find(',');
  while (pos != std::string_view::npos) {
    std::string_view rest = device.substr(pos + 1);
    size_t end = rest.find(',');
    std::string_view arg = rest.substr(0, end);
    if (arg.size() > key.size() && arg.substr(0, key.size()) == key && arg[key.size()] == '=') {
      std::string_view v = arg.substr(key.size() + 1);
      uint32_t out = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
      if (ec != std::errc{} || ptr != v.data() + v.size()) return 0;
      return out;
    }
    pos = end == std::string_view::npos ? end : pos + 1 + end;
  }
  return 0;
}

uint32_t memif_buffer_size(uint32_t mtu) {
  // A frame is the MTU plus the 14-byte Ethernet header (no FCS on memif); rounded
  // up to a cache-line multiple so buffers in the shared region stay aligned.
  uint32_t frame = mtu + 14;
  uint32_t size = (frame + 63) & ~63u;
  return size < 2048 ? 2048 : size;
}

uint32_t af_packet_frame_count(uint32_t framesz, uint32_t blocksz) {
  constexpr uint32_t kRingBytes = 8u << 20;
  constexpr uint32_t kPmdDefault = 512;
  if (framesz == 0 || blocksz < framesz) return kPmdDefault;
  uint32_t per_block = blocksz / framesz;
  uint32_t frames = kRingBytes / framesz / per_block * per_block;
  return frames < kPmdDefault ? kPmdDefault : frames;
}

uint32_t rx_ring_frames(const config::PortConfig& p) {
  if (port_device_name(p).rfind("net_af_packet", 0) == 0) {
    uint32_t frames = devarg_u32(vdev_args(p), "framecnt");
    if (frames != 0) return frames;
  }
  return p.rx_descriptors;
}

std::string vdev_args(const config::PortConfig& p) {
  std::string name = port_device_name(p);
  if (name.rfind("net_af_packet", 0) == 0) {
    if (devarg_u32(p.device, "framecnt") != 0) return p.device;
    // The PMD's defaults: frames of 2048 bytes in blocks of a page.
    uint32_t framesz = devarg_u32(p.device, "framesz");
    uint32_t blocksz = devarg_u32(p.device, "blocksz");
    uint32_t frames =
        af_packet_frame_count(framesz != 0 ? framesz : 2048, blocksz != 0 ? blocksz : 4096);
    return p.device + ",framecnt=" + std::to_string(frames);
  }
  if (name.rfind("net_memif", 0) != 0) return p.device;
  if (devarg_u32(p.device, "bsize") != 0) return p.device;
  return p.device + ",bsize=" + std::to_string(memif_buffer_size(p.mtu));
}

std::vector<std::string> build_eal_args(const config::Config& cfg, const std::string& argv0) {
  std::vector<std::string> a{argv0};
  std::string lcores;
  for (uint32_t l : cfg.dataplane.lcores) {
    if (!lcores.empty()) lcores += ',';
    lcores += std::to_string(l);
  }
  a.insert(a.end(), {"-l", lcores, "--file-prefix", cfg.dataplane.file_prefix});
  if (!cfg.dataplane.hugepages) a.push_back("--no-huge");
  a.insert(a.end(), {"-m", std::to_string(cfg.dataplane.memory_mb)});
  bool any_pci = false;
  for (const auto& p : cfg.ports) {
    if (!p.pci.empty()) {
      a.insert(a.end(), {"-a", p.pci});
      any_pci = true;
    } else {
      a.insert(a.end(), {"--vdev", vdev_args(p)});
    }
  }
  // Without a PCI port, scanning the bus only finds devices we must not touch.
  if (!any_pci) a.push_back("--no-pci");
  // Telemetry stays on (DPDK's own tools read /wirespeed/ commands); keep EAL quiet
  // unless the operator asks otherwise through eal_args.
  a.push_back("--log-level=lib.eal:notice");
  for (const auto& e : cfg.dataplane.eal_args) a.push_back(e);
  return a;
}

}  // namespace ws::dp
