// A pcapng file writer (the block format of draft-ietf-opsawg-pcapng): one section, an interface
// per port, and Enhanced Packet Blocks with nanosecond timestamps and the direction of each
// packet. libpcap reads pcapng but cannot write it, and no packaged library writes it, so these
// few block layouts are written here.
//
// Thread contract: one thread at a time per object (the tap's writer thread). Blocking: write(2)
// on the file, nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace fastcm::pcap_tap {

enum class Direction : std::uint8_t { inbound = 1, outbound = 2 };  // epb_flags bits 0-1

inline constexpr std::uint16_t kLinkTypeEthernet = 1;

class PcapngWriter {
 public:
  // Creates or truncates `path` and writes the section header. Errors: throws std::system_error
  // (the path and errno) when the file cannot be created or written.
  explicit PcapngWriter(const std::filesystem::path& path);
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;
  // Writes what is buffered and closes the file; a write error at this point is lost.
  ~PcapngWriter();

  // Declares the next interface (IDs count from 0 in call order): Ethernet, nanosecond
  // timestamps, `name` as if_name. Buffered. Never fails.
  void add_interface(std::string_view name);

  // Appends one packet on `interface`, copied. Buffered; the buffer is written out when it holds
  // 64 KiB. Errors: returns false when writing the buffer failed (errno kept in last_errno()); the
  // file is then left as it was before the failing write.
  [[nodiscard]] bool write_packet(std::uint32_t interface, std::uint64_t unix_time_ns,
                                  Direction direction, std::span<const std::uint8_t> frame);

  // Writes what is buffered. Errors: returns false as write_packet does.
  [[nodiscard]] bool flush();

  // Bytes in the file once the buffer is written (the section and interface blocks included).
  [[nodiscard]] std::uint64_t size() const noexcept { return written_ + buffer_.size(); }
  // The size of the block write_packet() appends for a frame of `frame_size` bytes.
  [[nodiscard]] static std::size_t packet_block_size(std::size_t frame_size) noexcept;
  [[nodiscard]] int last_errno() const noexcept { return last_errno_; }

 private:
  void append(const void* bytes, std::size_t n);
  void append_u16(std::uint16_t v) { append(&v, sizeof v); }
  void append_u32(std::uint32_t v) { append(&v, sizeof v); }
  void pad_to_4();

  int fd_ = -1;
  std::uint64_t written_ = 0;
  std::vector<std::uint8_t> buffer_;  // reserved once; blocks are written in host byte order
  int last_errno_ = 0;
};

}  // namespace fastcm::pcap_tap
