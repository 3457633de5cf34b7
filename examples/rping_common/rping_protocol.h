// What stock rping (librdmacm's examples/rping.c, rdma-core 44) exchanges over an RC QP once
// connected, so that fastcm's examples serve and use the unmodified tool:
//
//   client: SEND advert(start buffer)        server: RDMA READ of it, then SEND "go ahead"
//   client: SEND advert(sink buffer)         server: RDMA WRITE of what it read, then SEND "go ahead"
//   ... once per ping; then the client disconnects.
//
// An advert is 16 bytes, big-endian: buffer address (8), rkey (4), size (4). A "go ahead" is any
// 16-byte SEND (the client checks only its length). The client's ping text: "rdma-ping-N: ", then
// letters from 'A' + N mod 58 counting up through 'z' and wrapping to 'A', up to size - 1 bytes,
// then a NUL; rping -V compares what comes back with what it sent.
//
// Thread contract: pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fastcm::examples::rping {

inline constexpr std::size_t kAdvertBytes = 16;
inline constexpr std::uint16_t kDefaultPort = 7174;  // rping's default rdma_cm TCP port
inline constexpr std::uint32_t kDefaultSize = 64;    // rping -S default
// rping's bounds on -S: room for "rdma-ping-2147483647: " and its NUL; below 64 KiB.
inline constexpr std::uint32_t kMinSize = 26;
inline constexpr std::uint32_t kMaxSize = 65535;

struct Advert {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
  std::uint32_t size = 0;
};

void write_advert(const Advert& advert, std::span<std::uint8_t, kAdvertBytes> out) noexcept;
[[nodiscard]] Advert read_advert(std::span<const std::uint8_t, kAdvertBytes> in) noexcept;

// Writes ping `ping`'s text into all of `buffer` (buffer.size() >= kMinSize).
void fill_ping(std::span<char> buffer, std::uint32_t ping) noexcept;
// True when `buffer` holds exactly what fill_ping(buffer, ping) writes.
[[nodiscard]] bool is_ping(std::span<const char> buffer, std::uint32_t ping) noexcept;

}  // namespace fastcm::examples::rping
