#include "engine/mad/codec.h"

namespace fastcm::mad {

CodecStatus decode_header(std::span<const std::uint8_t> buf, MadHeader& out) noexcept {
  if (buf.size() < kMadSize) return CodecStatus::fail(CodecErrc::short_buffer, {});
  if (CodecStatus s = MadHeaderLayout::decode(buf.data(), out); !s.ok()) return s;
  if (out.base_version != kMadBaseVersion) {
    return CodecStatus::fail(CodecErrc::bad_base_version, "base_version");
  }
  if (out.mgmt_class != kCmMgmtClass) {
    return CodecStatus::fail(CodecErrc::bad_management_class, "mgmt_class");
  }
  if (out.class_version != kCmClassVersion) {
    return CodecStatus::fail(CodecErrc::bad_class_version, "class_version");
  }
  if (attr_name(out.attribute_id).empty()) {
    return CodecStatus::fail(CodecErrc::unknown_attribute, "attribute_id");
  }
  if (!method_allowed(out.attribute_id, out.method)) {
    return CodecStatus::fail(CodecErrc::bad_method, "method");
  }
  return {};
}

namespace {

template <CmMessage M>
CodecStatus decode_as(ConstMadSpan mad, AnyMessage& out) noexcept {
  M& msg = out.emplace<M>();
  return decode_body(mad, msg);
}

}  // namespace

CodecStatus decode(std::span<const std::uint8_t> buf, DecodedMad& out) noexcept {
  if (CodecStatus s = decode_header(buf, out.header); !s.ok()) return s;
  const ConstMadSpan mad = buf.first<kMadSize>();
  switch (out.header.attribute_id) {
    case AttrId::class_port_info: return decode_as<ClassPortInfo>(mad, out.message);
    case AttrId::req: return decode_as<Req>(mad, out.message);
    case AttrId::mra: return decode_as<Mra>(mad, out.message);
    case AttrId::rej: return decode_as<Rej>(mad, out.message);
    case AttrId::rep: return decode_as<Rep>(mad, out.message);
    case AttrId::rtu: return decode_as<Rtu>(mad, out.message);
    case AttrId::dreq: return decode_as<Dreq>(mad, out.message);
    case AttrId::drep: return decode_as<Drep>(mad, out.message);
    case AttrId::sidr_req: return decode_as<SidrReq>(mad, out.message);
    case AttrId::sidr_rep: return decode_as<SidrRep>(mad, out.message);
    case AttrId::lap: return decode_as<Lap>(mad, out.message);
    case AttrId::apr: return decode_as<Apr>(mad, out.message);
  }
  return CodecStatus::fail(CodecErrc::unknown_attribute, "attribute_id");
}

std::span<const std::uint8_t> private_data(ConstMadSpan mad) noexcept {
  std::size_t size = 0;
  switch (peek<&MadHeader::attribute_id>(mad)) {
    case AttrId::class_port_info: size = 0; break;
    case AttrId::req: size = kReqPrivateDataSize; break;
    case AttrId::mra: size = kMraPrivateDataSize; break;
    case AttrId::rej: size = kRejPrivateDataSize; break;
    case AttrId::rep: size = kRepPrivateDataSize; break;
    case AttrId::rtu: size = kRtuPrivateDataSize; break;
    case AttrId::dreq: size = kDreqPrivateDataSize; break;
    case AttrId::drep: size = kDrepPrivateDataSize; break;
    case AttrId::sidr_req: size = kSidrReqPrivateDataSize; break;
    case AttrId::sidr_rep: size = kSidrRepPrivateDataSize; break;
    case AttrId::lap: size = kLapPrivateDataSize; break;
    case AttrId::apr: size = kAprPrivateDataSize; break;
  }
  return std::span<const std::uint8_t>(mad).last(size);
}

}  // namespace fastcm::mad
