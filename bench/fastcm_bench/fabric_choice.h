// The fabric of a server or client process: --fabric umad or udp opened on the ports the command
// line names. (The loopback fabric of --role both holds both sides and stays in the Rig.)
#pragma once

#include <memory>
#include <string>

#include "bench/fastcm_bench/options.h"
#include "fastcm/fabric.h"

namespace fastcm::bench {

// Opens options.fabric (umad: --device and --hca-port; udp: --address and --udp-port). Returns
// null with `error` set to the fabric's one-line message (no such device or port, port down, no
// permission, address not local, the CM class owned by the kernel, ...) when it cannot be opened.
// Must not be called for the loopback fabric (returns null with an error saying so). Thread
// contract: main thread; may block while the fabric opens its devices or sockets.
[[nodiscard]] std::unique_ptr<Fabric> open_fabric(const Options& options, std::string& error);

}  // namespace fastcm::bench
