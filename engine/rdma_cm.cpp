// The rdma_cm private-data IP header (IBTA Vol. 1 Annex A11; struct cma_hdr of Linux'
// drivers/infiniband/core/cma.c), declared with the codec's field machinery like the CM messages:
// one row per field, byte/bit/width as on the wire, the valid values with it.
#include <algorithm>
#include <array>

#include "engine/mad/field_layout.h"
#include "fastcm/rdma_cm.h"

namespace fastcm::rdma_cm {

namespace {

// The header as it is on the wire, one member per field.
struct WireIpHeader {
  std::uint8_t cma_version = 0;
  std::uint8_t ip_version = 0;  // top nibble of byte 1; the low nibble is reserved
  std::uint16_t source_port = 0;
  Ipv6Address source_address{};
  Ipv6Address destination_address{};
};

constexpr mad::FieldName kCmaVersionName{"cma_version"};

// Linux checks exactly these on receive (cma_save_ip_info): version 0x00, IP version 4 or 6.
constexpr bool is_ip_version(std::uint64_t raw) noexcept {
  return raw == static_cast<std::uint8_t>(IpVersion::v4) || raw == static_cast<std::uint8_t>(IpVersion::v6);
}

using IpHeaderLayout = mad::FieldList<
    mad::Field<kCmaVersionName, &WireIpHeader::cma_version, 0, 0, 8, mad::at_most<0>>,
    mad::Field<"ip_version", &WireIpHeader::ip_version, 1, 0, 4, is_ip_version>,
    mad::Field<"source_port", &WireIpHeader::source_port, 2, 0, 16>,
    mad::Bytes<"source_address", &WireIpHeader::source_address, 4, 16>,
    mad::Bytes<"destination_address", &WireIpHeader::destination_address, 20, 16>>;
static_assert(IpHeaderLayout::kEnd == kIpHeaderSize);

// Only the two checked fields can fail; the layout names the one that did.
HeaderStatus status_of(const mad::CodecStatus& s) noexcept {
  if (s.ok()) return HeaderStatus::ok;
  return s.field == kCmaVersionName.view() ? HeaderStatus::bad_version : HeaderStatus::bad_ip_version;
}

}  // namespace

HeaderStatus encode_private_data(const IpHeader& header, std::span<const std::uint8_t> consumer_data,
                                 std::span<std::uint8_t> out, std::size_t& used) noexcept {
  used = 0;
  WireIpHeader wire;
  wire.ip_version = static_cast<std::uint8_t>(header.ip_version);
  wire.source_port = header.src_port;
  wire.source_address = header.src_addr;
  wire.destination_address = header.dst_addr;
  std::array<std::uint8_t, kIpHeaderSize> bytes{};  // the reserved nibble stays zero
  if (const HeaderStatus s = status_of(IpHeaderLayout::encode(wire, bytes.data())); s != HeaderStatus::ok) {
    return s;
  }
  if (out.size() < kIpHeaderSize || out.size() - kIpHeaderSize < consumer_data.size()) {
    return HeaderStatus::buffer_too_small;
  }
  const auto after_header = std::copy(bytes.begin(), bytes.end(), out.begin());
  std::copy(consumer_data.begin(), consumer_data.end(), after_header);
  used = kIpHeaderSize + consumer_data.size();
  return HeaderStatus::ok;
}

HeaderStatus decode_private_data(std::span<const std::uint8_t> private_data, IpHeader& header,
                                 std::span<const std::uint8_t>& consumer_data) noexcept {
  if (private_data.size() < kIpHeaderSize) return HeaderStatus::too_short;
  WireIpHeader wire;
  if (const HeaderStatus s = status_of(IpHeaderLayout::decode(private_data.data(), wire)); s != HeaderStatus::ok) {
    return s;
  }
  header.ip_version = static_cast<IpVersion>(wire.ip_version);
  header.src_port = wire.source_port;
  header.src_addr = wire.source_address;
  header.dst_addr = wire.destination_address;
  consumer_data = private_data.subspan(kIpHeaderSize);
  return HeaderStatus::ok;
}

}  // namespace fastcm::rdma_cm
