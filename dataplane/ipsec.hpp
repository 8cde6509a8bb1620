// The data plane's side of ESP: one EspLayer per core built from the config's ipsec section,
// and its housekeeping (sequence reservations) between bursts.
#pragma once

#include <memory>
#include <string>

#include "control/config/config.hpp"
#include "stack/ipsec/esp_layer.hpp"
#include "stack/steer/flow_owner.hpp"

namespace ws::dp {

// nullptr with an empty `error` when the config has no SAs; nullptr with `error` when the
// layer cannot start. Warnings (an outbound SA stopped by its sequence record) are printed.
// Outbound SAs reserve and take sequence numbers only on the core `owner` gives them
// (sa_owner in steering.hpp); on the others they exist for the policies but send nothing.
std::unique_ptr<ipsec::EspLayer> make_esp_layer(const config::Config& cfg, uint32_t core,
                                                const FlowOwner& owner, std::string& error);

// Reserves the next sequence blocks where SAs run low (a file write and fsync per block of
// 2^20 packets), and reports failures once per SA.
void esp_housekeeping(ipsec::EspLayer& esp);

}  // namespace ws::dp
