#include "fabric/pcap_tap/pcapng_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace fastcm::pcap_tap {

namespace {

constexpr std::size_t kBufferBytes = 64 * 1024;
// Block types and option codes (pcapng sections 4.1-4.3).
constexpr std::uint32_t kSectionHeaderBlock = 0x0A0D0D0A;
constexpr std::uint32_t kInterfaceDescriptionBlock = 1;
constexpr std::uint32_t kEnhancedPacketBlock = 6;
constexpr std::uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr std::uint16_t kOptEnd = 0;
constexpr std::uint16_t kIfName = 2;
constexpr std::uint16_t kIfTsresol = 9;
constexpr std::uint16_t kEpbFlags = 2;
constexpr std::uint8_t kNanoseconds = 9;  // if_tsresol: 10^-9
constexpr std::uint32_t kSnapLength = 0;  // no limit

constexpr std::size_t padded(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

}  // namespace

PcapngWriter::PcapngWriter(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), path.string());
  buffer_.reserve(kBufferBytes + packet_block_size(1 << 16));
  constexpr std::uint32_t kLength = 28;  // no options
  append_u32(kSectionHeaderBlock);
  append_u32(kLength);
  append_u32(kByteOrderMagic);
  append_u16(1);  // major version
  append_u16(0);  // minor version
  const std::int64_t unknown_section_length = -1;
  append(&unknown_section_length, sizeof unknown_section_length);
  append_u32(kLength);
  if (!flush()) {
    ::close(fd_);
    throw std::system_error(last_errno_, std::generic_category(), path.string());
  }
}

PcapngWriter::~PcapngWriter() {
  (void)flush();
  ::close(fd_);
}

void PcapngWriter::append(const void* bytes, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(bytes);
  buffer_.insert(buffer_.end(), p, p + n);
}

void PcapngWriter::pad_to_4() { buffer_.resize(padded(buffer_.size()), 0); }

void PcapngWriter::add_interface(std::string_view name) {
  const std::uint32_t length =
      static_cast<std::uint32_t>(20 + 4 + padded(name.size()) + 4 + 4 + 4);
  append_u32(kInterfaceDescriptionBlock);
  append_u32(length);
  append_u16(kLinkTypeEthernet);
  append_u16(0);  // reserved
  append_u32(kSnapLength);
  append_u16(kIfName);
  append_u16(static_cast<std::uint16_t>(name.size()));
  append(name.data(), name.size());
  pad_to_4();
  append_u16(kIfTsresol);
  append_u16(1);
  append(&kNanoseconds, 1);
  pad_to_4();
  append_u16(kOptEnd);
  append_u16(0);
  append_u32(length);
}

std::size_t PcapngWriter::packet_block_size(std::size_t frame_size) noexcept {
  return 28 + padded(frame_size) + 8 /* epb_flags */ + 4 /* opt_endofopt */ + 4;
}

bool PcapngWriter::write_packet(std::uint32_t interface, std::uint64_t unix_time_ns,
                                Direction direction, std::span<const std::uint8_t> frame) {
  const auto length = static_cast<std::uint32_t>(packet_block_size(frame.size()));
  const auto captured = static_cast<std::uint32_t>(frame.size());
  append_u32(kEnhancedPacketBlock);
  append_u32(length);
  append_u32(interface);
  append_u32(static_cast<std::uint32_t>(unix_time_ns >> 32));
  append_u32(static_cast<std::uint32_t>(unix_time_ns));
  append_u32(captured);
  append_u32(captured);  // original length: frames are never cut
  append(frame.data(), frame.size());
  pad_to_4();
  append_u16(kEpbFlags);
  append_u16(4);
  append_u32(static_cast<std::uint32_t>(direction));
  append_u16(kOptEnd);
  append_u16(0);
  append_u32(length);
  return buffer_.size() < kBufferBytes || flush();
}

bool PcapngWriter::flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      last_errno_ = n < 0 ? errno : EIO;
      // Keep the file at a block boundary: cut what this call wrote of the buffer.
      if (done > 0) (void)::ftruncate(fd_, static_cast<off_t>(written_));
      (void)::lseek(fd_, static_cast<off_t>(written_), SEEK_SET);
      buffer_.clear();
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  written_ += buffer_.size();
  buffer_.clear();
  return true;
}

}  // namespace fastcm::pcap_tap
