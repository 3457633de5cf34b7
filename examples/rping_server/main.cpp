// rping_server: a server for stock librdmacm clients built on fastcm and libibverbs. fastcm runs
// the CM over the umad fabric of an RDMA device (the kernel's ib_cm, rdma_cm and rdma_ucm must
// not be loaded there); the connections' RC QPs are the program's own, moved through INIT, RTR
// and RTS with the attributes Engine::init_qp_attr derives. It serves
//   rping -c -a ADDRESS [-p 7174] [-v] [-V] [-C N] [-S SIZE]     (librdmacm's ping-pong)
//   ucmatose -s ADDRESS [-p 7471] [-c CONNECTIONS]                (librdmacm's connection test)
// checking every ping against rping's text before writing it back, and for ucmatose sending its
// message_count messages, receiving as many and disconnecting, as ucmatose's own server does.
//
// Usage: rping_server [--device NAME] [--hca-port N] [--port P] [--ucmatose-port P]
//                     [--ucmatose-count N] [--ucmatose-size BYTES] [--connections N]
// Prints "rping_server: listening ..." once it listens, then a line per connection event and each
// ping as rping -s -v prints it ("server ping data: ..."). Stops after --connections connections
// have ended, or at SIGINT/SIGTERM. Exit status: 0 when every connection that came was served
// (and, with --connections, that many came), 1 otherwise or when the device cannot be opened,
// 2 for a usage error.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "examples/rping_common/rdma_program.h"
#include "examples/rping_server/rping_server.h"
#include "fabric/roce_udp/ip_gid.h"

namespace {

using fastcm::examples::EventLoop;
using fastcm::examples::RdmaProgram;
using fastcm::examples::RpingServer;
using fastcm::examples::ServerConfig;

struct Options {
  std::string device;
  std::uint8_t hca_port = 0;
  ServerConfig server;
};

// Parses argv into `o`; returns the exit status when the program is to stop (0 after --help, 2
// after a usage error, printed), or -1 to go on.
int parse(int argc, char** argv, Options& o) {
  CLI::App app{"Serves stock rping and ucmatose clients over fastcm (umad) and libibverbs."};
  app.add_option("--device", o.device, "RDMA device (default: the first umad CA)");
  app.add_option("--hca-port", o.hca_port, "device port (default: its first active one)")->check(CLI::Range(1, 255));
  app.add_option("--port", o.server.rping_port, "rdma_cm TCP port of the rping service")
      ->capture_default_str()->check(CLI::Range(1, 65535));
  app.add_option("--ucmatose-port", o.server.ucmatose_port, "rdma_cm TCP port of the ucmatose service (0: none)")
      ->capture_default_str();
  app.add_option("--ucmatose-count", o.server.ucmatose_count, "messages each way per ucmatose connection")
      ->capture_default_str()->check(CLI::Range(1u, fastcm::examples::kMaxUcmatoseCount));
  app.add_option("--ucmatose-size", o.server.ucmatose_size, "bytes per ucmatose message")
      ->capture_default_str()->check(CLI::Range(1u, fastcm::examples::kMaxUcmatoseSize));
  app.add_option("--connections", o.server.connections, "stop once this many connections have ended (0: never)")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
    if (o.server.rping_port == o.server.ucmatose_port) {
      throw CLI::ValidationError("--port and --ucmatose-port must differ");
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  EventLoop::block_stop_signals();  // before the engine's threads start: they inherit the mask
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  if (const int status = parse(argc, argv, o); status >= 0) return status;

  std::string error;
  const int cq_entries = static_cast<int>(fastcm::examples::kMaxServedConnections * 2 *
                                          std::max(o.server.ucmatose_count, 4u));
  const std::unique_ptr<RdmaProgram> program = RdmaProgram::open(o.device, o.hca_port, cq_entries, error);
  if (program == nullptr) {
    std::fprintf(stderr, "rping_server: %s\n", error.c_str());
    return 1;
  }
  const fastcm::examples::CmStack& cm = *program->cm;
  RpingServer server(*program->cm, *program->verbs, o.server);
  if (!server.listen(error)) {
    std::fprintf(stderr, "rping_server: %s\n", error.c_str());
    return 1;
  }
  std::string gids;
  for (const fastcm::Gid& gid : cm.port().gids()) {
    gids += ' ';
    gids += fastcm::roce::ip_text(gid);
  }
  std::printf("rping_server: listening on %s port %u (GIDs%s): rping on rdma_cm TCP port %u",
              cm.fabric->device().c_str(), cm.port().port_num, gids.c_str(), o.server.rping_port);
  if (o.server.ucmatose_port != 0) std::printf(", ucmatose on %u", o.server.ucmatose_port);
  std::printf("\n");

  const bool ran = program->run(server, error);
  if (!ran) std::fprintf(stderr, "rping_server: %s\n", error.c_str());
  if (program->loop.stop_requested()) std::printf("rping_server: stopped by %s\n", program->loop.stop_signal().c_str());
  server.stop();
  std::printf("rping_server: %u connections ended, %u failed; %llu pings verified, %llu ucmatose messages received\n",
              server.finished(), server.failed(), static_cast<unsigned long long>(server.pings()),
              static_cast<unsigned long long>(server.messages()));
  const bool all_came = o.server.connections == 0 || server.done();
  return ran && server.failed() == 0 && all_came ? 0 : 1;
}
