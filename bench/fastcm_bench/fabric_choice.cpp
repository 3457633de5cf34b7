#include "bench/fastcm_bench/fabric_choice.h"

#include "fabric/roce_udp/udp_fabric.h"
#include "fabric/umad/umad_fabric.h"

namespace fastcm::bench {

std::unique_ptr<Fabric> open_fabric(const Options& options, std::string& error) {
  switch (options.fabric) {
    case FabricKind::umad:
      return umad::open_umad_fabric(umad::UmadConfig{options.device, options.hca_ports}, error);
    case FabricKind::udp:
      return roce::open_udp_fabric(roce::UdpConfig{options.addresses, options.udp_port}, error);
    case FabricKind::loopback: break;
  }
  error = "the loopback fabric is not opened per process (it serves --role both)";
  return nullptr;
}

}  // namespace fastcm::bench
