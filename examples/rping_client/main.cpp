// rping_client: the client half of librdmacm's rping, built on fastcm and libibverbs, for a stock
// `rping -s` server (or any rdma_cm listener speaking rping). fastcm runs the CM over the umad
// fabric of an RDMA device (the kernel's ib_cm, rdma_cm and rdma_ucm must not be loaded there):
// its REQ carries rdma_cm's IP header on the TCP port space, as librdmacm's would. The RC QP is
// the program's own, moved through INIT, RTR and RTS with Engine::init_qp_attr.
//
// Usage: rping_client --target-ip IP [--source-ip IP] [--port P] [-C COUNT] [-S SIZE]
//                     [--device NAME] [--hca-port N] [--cm-timeout T] [--cm-retries N]
// Prints each CM event it meets and each ping as `rping -c -v` does ("ping data: ..."). Exit
// status: 0 when all COUNT pings came back as sent and the disconnect went through time-wait; 1
// when the listener refused (REJ: its reason and private data are printed), did not answer (the
// REQ's retries ran out), the data differed, or the device cannot be opened; 2 for a usage error.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <optional>
#include <cstdio>
#include <string>

#include "examples/rping_client/rping_client.h"
#include "examples/rping_common/rdma_program.h"
#include "fabric/roce_udp/ip_gid.h"

namespace {

using fastcm::examples::ClientConfig;
using fastcm::examples::CmStack;
using fastcm::examples::EventLoop;
using fastcm::examples::RdmaProgram;
using fastcm::examples::RpingClient;

struct Options {
  std::string device;
  std::uint8_t hca_port = 0;
  std::string source_ip;
  std::string target_ip;
  ClientConfig client;
};

// Parses argv into `o`; returns the exit status when the program is to stop (0 after --help, 2
// after a usage error, printed), or -1 to go on.
int parse(int argc, char** argv, Options& o) {
  namespace rping = fastcm::examples::rping;
  CLI::App app{"The client half of rping over fastcm (umad) and libibverbs, for a stock rping -s."};
  app.add_option("--target-ip", o.target_ip, "the listener's address")->required();
  app.add_option("--source-ip", o.source_ip, "the local port's address (default: its first of the target's kind)");
  app.add_option("--port", o.client.port, "the listener's rdma_cm TCP port")->capture_default_str()->check(CLI::Range(1, 65535));
  app.add_option("-C,--count", o.client.count, "pings")->capture_default_str()->check(CLI::Range(1, 1'000'000));
  app.add_option("-S,--size", o.client.size, "bytes per ping")
      ->capture_default_str()->check(CLI::Range(rping::kMinSize, rping::kMaxSize));
  app.add_option("--device", o.device, "RDMA device (default: the first umad CA)");
  app.add_option("--hca-port", o.hca_port, "device port (default: its first active one)")->check(CLI::Range(1, 255));
  app.add_option("--cm-timeout", o.client.cm_response_timeout, "CM response timeout exponent (4.096 us * 2^T)")
      ->capture_default_str()->check(CLI::Range(0, 31));
  app.add_option("--cm-retries", o.client.max_cm_retries, "REQ retries before giving up")
      ->capture_default_str()->check(CLI::Range(0, 15));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

// Fills the GIDs of `o.client` from the IP texts; the source defaults to the port's first GID of
// the target's kind (IPv4-mapped or IPv6, not link-local).
bool resolve(const CmStack& cm, Options& o, std::string& error) {
  const std::optional<fastcm::Gid> target = fastcm::roce::gid_from_ip_text(o.target_ip);
  if (!target) {
    error = "--target-ip " + o.target_ip + " is not an IP address";
    return false;
  }
  o.client.target = *target;
  const auto gids = cm.port().gids();
  if (!o.source_ip.empty()) {
    const std::optional<fastcm::Gid> source = fastcm::roce::gid_from_ip_text(o.source_ip);
    if (!source || std::find(gids.begin(), gids.end(), *source) == gids.end()) {
      error = "--source-ip " + o.source_ip + " is not a GID of the port";
      return false;
    }
    o.client.source = *source;
    return true;
  }
  const std::optional<fastcm::Gid> source = fastcm::examples::source_gid_for(cm.port(), *target);
  if (!source) {
    error = "the port has no GID of the target's kind: give --source-ip";
    return false;
  }
  o.client.source = *source;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  EventLoop::block_stop_signals();  // before the engine's threads start: they inherit the mask
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  if (const int status = parse(argc, argv, o); status >= 0) return status;

  std::string error;
  const std::unique_ptr<RdmaProgram> program = RdmaProgram::open(o.device, o.hca_port, 16, error);
  if (program == nullptr || !resolve(*program->cm, o, error)) {
    std::fprintf(stderr, "rping_client: %s\n", error.c_str());
    return 1;
  }
  std::printf("rping_client: %s port %u, from %s to %s\n", program->cm->fabric->device().c_str(),
              program->cm->port().port_num, fastcm::roce::ip_text(o.client.source).c_str(),
              fastcm::roce::ip_text(o.client.target).c_str());
  RpingClient client(*program->cm, *program->verbs, o.client);
  const bool ran = client.start(error) && program->run(client, error);
  if (!ran) std::fprintf(stderr, "rping_client: %s\n", error.c_str());
  if (program->loop.stop_requested()) std::printf("rping_client: stopped by %s\n", program->loop.stop_signal().c_str());
  client.stop();
  return ran && client.succeeded() ? 0 : 1;
}
