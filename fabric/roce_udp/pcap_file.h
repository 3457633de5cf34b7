// Ethernet capture files through libpcap: a writer for the classic pcap format and a reader for
// whatever libpcap opens (pcap, pcapng). Used by tools and tests, not on the per-MAD path.
//
// Thread contract: an object is used by one thread at a time; distinct objects are independent.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>

struct pcap;
struct pcap_dumper;

namespace fastcm::roce {

// Every failure of this file's classes: the message names the path and libpcap's reason.
class PcapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Time since the Unix epoch, at the resolution of the classic pcap format.
using PcapTimestamp = std::chrono::microseconds;

namespace detail {
struct PcapCloser {
  void operator()(pcap* p) const noexcept;
  void operator()(pcap_dumper* d) const noexcept;
};
}  // namespace detail

class PcapWriter {
 public:
  // Creates or truncates `path` as a pcap of link type Ethernet (DLT_EN10MB), snap length 65535.
  // Errors: throws PcapError when the file cannot be created.
  explicit PcapWriter(const std::filesystem::path& path);
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;
  // Flushes and closes the file; a write error at this point is lost (call flush() first).
  ~PcapWriter();

  // Appends one frame, copied, with `timestamp`.
  // Errors: throws PcapError when the frame exceeds the snap length, the timestamp is negative,
  // or the underlying file reports a write error.
  void write(std::span<const std::uint8_t> frame, PcapTimestamp timestamp);

  // Pushes buffered records to the file. Errors: throws PcapError on a write error.
  void flush();

 private:
  std::filesystem::path path_;
  std::unique_ptr<pcap, detail::PcapCloser> pcap_;
  std::unique_ptr<pcap_dumper, detail::PcapCloser> dumper_;  // declared last: closed first
};

struct PcapRecord {
  PcapTimestamp timestamp{};
  std::span<const std::uint8_t> frame;  // the captured bytes, owned by the reader
  std::uint32_t original_length =
      0;  // length on the wire; above frame.size() if the capture was cut
};

class PcapReader {
 public:
  // Opens `path` for reading.
  // Errors: throws PcapError when it cannot be opened or is not an Ethernet capture.
  explicit PcapReader(const std::filesystem::path& path);
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;
  ~PcapReader();

  // The next record, or std::nullopt at the end of the file. The record's frame stays valid until
  // the next call or the reader's destruction.
  // Errors: throws PcapError when the file is damaged (e.g. cut inside a record).
  [[nodiscard]] std::optional<PcapRecord> next();

 private:
  std::filesystem::path path_;
  std::unique_ptr<pcap, detail::PcapCloser> pcap_;
};

}  // namespace fastcm::roce
