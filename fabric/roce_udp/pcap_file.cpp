#include "fabric/roce_udp/pcap_file.h"

#include <pcap/pcap.h>

#include <cstdio>
#include <string>

namespace fastcm::roce {
namespace {

constexpr int kSnapLength = 65535;
constexpr std::int64_t kMicrosPerSecond = 1'000'000;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& reason) {
  throw PcapError("pcap " + path.string() + ": " + reason);
}

}  // namespace

namespace detail {
void PcapCloser::operator()(pcap* p) const noexcept {
  pcap_close(p);
}
void PcapCloser::operator()(pcap_dumper* d) const noexcept {
  pcap_dump_close(d);
}
}  // namespace detail

PcapWriter::PcapWriter(const std::filesystem::path& path)
    : path_(path), pcap_(pcap_open_dead(DLT_EN10MB, kSnapLength)) {
  if (!pcap_) fail(path_, "cannot allocate a libpcap handle");
  dumper_.reset(pcap_dump_open(pcap_.get(), path_.c_str()));
  if (!dumper_) fail(path_, pcap_geterr(pcap_.get()));
}

PcapWriter::~PcapWriter() = default;

void PcapWriter::write(std::span<const std::uint8_t> frame, PcapTimestamp timestamp) {
  if (frame.size() > static_cast<std::size_t>(kSnapLength)) {
    fail(path_, "frame of " + std::to_string(frame.size()) + " bytes exceeds the snap length");
  }
  const std::int64_t us = timestamp.count();
  if (us < 0) fail(path_, "negative timestamp");
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = static_cast<time_t>(us / kMicrosPerSecond);
  hdr.ts.tv_usec = static_cast<suseconds_t>(us % kMicrosPerSecond);
  hdr.caplen = static_cast<bpf_u_int32>(frame.size());
  hdr.len = hdr.caplen;
  // libpcap's dump callback takes the dumper as an untyped user pointer.
  pcap_dump(reinterpret_cast<u_char*>(dumper_.get()), &hdr, frame.data());
  if (std::ferror(pcap_dump_file(dumper_.get())) != 0) fail(path_, "write error");
}

void PcapWriter::flush() {
  if (pcap_dump_flush(dumper_.get()) != 0) fail(path_, "write error on flush");
}

PcapReader::PcapReader(const std::filesystem::path& path) : path_(path) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  // Micro precision makes libpcap scale nanosecond files to our timestamp unit.
  pcap_.reset(
      pcap_open_offline_with_tstamp_precision(path_.c_str(), PCAP_TSTAMP_PRECISION_MICRO, errbuf));
  if (!pcap_) fail(path_, errbuf);
  const int link = pcap_datalink(pcap_.get());
  if (link != DLT_EN10MB) {
    fail(path_, "link type " + std::to_string(link) + " is not Ethernet (DLT_EN10MB)");
  }
}

PcapReader::~PcapReader() = default;

std::optional<PcapRecord> PcapReader::next() {
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  const int rc = pcap_next_ex(pcap_.get(), &hdr, &data);
  if (rc == PCAP_ERROR_BREAK) return std::nullopt;  // end of a savefile
  if (rc != 1) fail(path_, pcap_geterr(pcap_.get()));
  PcapRecord rec;
  rec.timestamp = PcapTimestamp{static_cast<std::int64_t>(hdr->ts.tv_sec) * kMicrosPerSecond +
                                static_cast<std::int64_t>(hdr->ts.tv_usec)};
  rec.frame = std::span<const std::uint8_t>(data, hdr->caplen);
  rec.original_length = hdr->len;
  return rec;
}

}  // namespace fastcm::roce
