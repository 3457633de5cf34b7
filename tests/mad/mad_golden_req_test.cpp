// Golden REQs and MAD headers, written byte by byte from the IBTA tables (Vol. 1 Table 145 for the
// common MAD header, Table 106 for the REQ) without using the codec's layout declarations.
// Table offsets count from the CM data, which starts at MAD byte 24; bit 0 is a byte's most
// significant bit. Every literal below says which table row it encodes.
#include <gtest/gtest.h>

#include <cstdint>

#include "tests/mad/mad_test_support.h"

namespace fastcm::mad::test {
namespace {

// A REQ with a distinctive value in every field; XRC so that both transport type bits are set.
Req distinctive_req() {
  Req r;
  r.local_comm_id = 0x11223344;
  r.vendor_id = 0xabcdef;
  r.service_id = 0x0123456789abcdef;
  r.local_ca_guid = 0xfedcba9876543210;
  r.local_q_key = 0xc0dec0de;
  r.local_qpn = 0x123456;
  r.responder_resources = 0x9a;
  r.local_eecn = 0x654321;
  r.initiator_depth = 0x7b;
  r.remote_eecn = 0xa1b2c3;
  r.remote_cm_response_timeout = 0x15;
  r.transport_service_type = TransportServiceType::extended;
  r.end_to_end_flow_control = true;
  r.starting_psn = 0xabcde1;
  r.local_cm_response_timeout = 0x0e;
  r.retry_count = 5;
  r.partition_key = 0x8123;
  r.path_packet_payload_mtu = MtuCode::mtu_2048;
  r.rdc_exists = true;
  r.rnr_retry_count = 6;
  r.max_cm_retries = 0xb;
  r.srq = true;
  r.extended_transport_type = ExtendedTransportType::xrc;
  r.primary.local_port_lid = 0x1234;
  r.primary.remote_port_lid = 0x5678;
  r.primary.local_port_gid = counting_gid(0x10);
  r.primary.remote_port_gid = counting_gid(0x20);
  r.primary.flow_label = 0xabcde;
  r.primary.packet_rate = 23;  // 800 Gb/s
  r.primary.traffic_class = 0xc5;
  r.primary.hop_limit = 0x40;
  r.primary.sl = 0xd;
  r.primary.subnet_local = true;
  r.primary.local_ack_timeout = 0x13;
  r.alternate.local_port_lid = 0x2345;
  r.alternate.remote_port_lid = 0x6789;
  r.alternate.local_port_gid = counting_gid(0x30);
  r.alternate.remote_port_gid = counting_gid(0x40);
  r.alternate.flow_label = 0x12345;
  r.alternate.packet_rate = 14;  // 168 Gb/s
  r.alternate.traffic_class = 0x3a;
  r.alternate.hop_limit = 0xff;
  r.alternate.sl = 0x6;
  r.alternate.subnet_local = false;
  r.alternate.local_ack_timeout = 0x1f;
  r.sap_supported = true;
  r.private_data = counting_bytes<kReqPrivateDataSize>(0x80);
  return r;
}

TEST(MadGoldenReq, EveryFieldAtItsTablePosition) {
  Mad want = send_header_bytes(0x10);  // AttributeID 0x0010: REQ
  put(want, {
      // Local Communication ID, CM bytes 0-3.
      {24, 0x11}, {25, 0x22}, {26, 0x33}, {27, 0x44},
      // CM byte 4 reserved; VendorID (ECE), CM bytes 5-7.
      {29, 0xab}, {30, 0xcd}, {31, 0xef},
      // ServiceID, CM bytes 8-15.
      {32, 0x01}, {33, 0x23}, {34, 0x45}, {35, 0x67},
      {36, 0x89}, {37, 0xab}, {38, 0xcd}, {39, 0xef},
      // Local CA GUID, CM bytes 16-23; CM bytes 24-27 reserved.
      {40, 0xfe}, {41, 0xdc}, {42, 0xba}, {43, 0x98},
      {44, 0x76}, {45, 0x54}, {46, 0x32}, {47, 0x10},
      // Local Q_Key, CM bytes 28-31.
      {52, 0xc0}, {53, 0xde}, {54, 0xc0}, {55, 0xde},
      // Local QPN, CM bytes 32-34; Responder Resources, CM byte 35.
      {56, 0x12}, {57, 0x34}, {58, 0x56}, {59, 0x9a},
      // Local EECN, CM bytes 36-38; Initiator Depth, CM byte 39.
      {60, 0x65}, {61, 0x43}, {62, 0x21}, {63, 0x7b},
      // Remote EECN, CM bytes 40-42.
      {64, 0xa1}, {65, 0xb2}, {66, 0xc3},
      // CM byte 43: Remote CM Response Timeout bits 0-4 = 10101, Transport Service Type bits 5-6
      // = 11, End-to-End Flow Control bit 7 = 1.
      {67, 0b10101'11'1},
      // Starting PSN, CM bytes 44-46.
      {68, 0xab}, {69, 0xcd}, {70, 0xe1},
      // CM byte 47: Local CM Response Timeout bits 0-4 = 01110, Retry Count bits 5-7 = 101.
      {71, 0b01110'101},
      // Partition Key, CM bytes 48-49.
      {72, 0x81}, {73, 0x23},
      // CM byte 50: Path Packet Payload MTU bits 0-3 = 0100 (2048), RDC Exists bit 4 = 1,
      // RNR Retry Count bits 5-7 = 110.
      {74, 0b0100'1'110},
      // CM byte 51: Max CM Retries bits 0-3 = 1011, SRQ bit 4 = 1, Extended Transport Type
      // bits 5-7 = 001 (XRC).
      {75, 0b1011'1'001},
      // Primary Local / Remote Port LID, CM bytes 52-53 / 54-55.
      {76, 0x12}, {77, 0x34}, {78, 0x56}, {79, 0x78},
      // Primary Flow Label, 20 bits over CM bytes 88-90 (the low nibble of 90 is reserved).
      {112, 0xab}, {113, 0xcd}, {114, 0xe0},
      // CM byte 91: 2 reserved bits, Primary Packet Rate bits 2-7 = 010111 (23).
      {115, 0b00'010111},
      // Primary Traffic Class, CM byte 92; Primary Hop Limit, CM byte 93.
      {116, 0xc5}, {117, 0x40},
      // CM byte 94: Primary SL bits 0-3 = 1101, Primary Subnet Local bit 4 = 1, 3 reserved.
      {118, 0b1101'1'000},
      // CM byte 95: Primary Local ACK Timeout bits 0-4 = 10011, 3 reserved.
      {119, 0b10011'000},
      // Alternate Local / Remote Port LID, CM bytes 96-97 / 98-99.
      {120, 0x23}, {121, 0x45}, {122, 0x67}, {123, 0x89},
      // Alternate Flow Label, 20 bits over CM bytes 132-134.
      {156, 0x12}, {157, 0x34}, {158, 0x50},
      // CM byte 135: 2 reserved bits, Alternate Packet Rate bits 2-7 = 001110 (14).
      {159, 0b00'001110},
      // Alternate Traffic Class, CM byte 136; Alternate Hop Limit, CM byte 137.
      {160, 0x3a}, {161, 0xff},
      // CM byte 138: Alternate SL bits 0-3 = 0110, Alternate Subnet Local bit 4 = 0.
      {162, 0b0110'0'000},
      // CM byte 139: Alternate Local ACK Timeout bits 0-4 = 11111, SAP Supported bit 5 = 1,
      // 2 reserved.
      {163, 0b11111'1'00},
  });
  put_counting_bytes(want, 80, 16, 0x10);   // Primary Local Port GID, CM bytes 56-71
  put_counting_bytes(want, 96, 16, 0x20);   // Primary Remote Port GID, CM bytes 72-87
  put_counting_bytes(want, 124, 16, 0x30);  // Alternate Local Port GID, CM bytes 100-115
  put_counting_bytes(want, 140, 16, 0x40);  // Alternate Remote Port GID, CM bytes 116-131
  put_counting_bytes(want, 164, 92, 0x80);  // PrivateData, CM bytes 140-231

  expect_golden(cm_header(Method::send, AttrId::req, kTestTid), distinctive_req(), want);
}

// A default REQ: all zero on the wire but for MTU code 1 (256 bytes) in the top nibble of CM byte
// 50. The three non-extended transport types land in bits 5-6 of CM byte 43.
TEST(MadGoldenReq, TransportTypesInBitsFiveAndSixOfByte43) {
  struct Case {
    TransportServiceType type;
    std::uint8_t byte43;
  };
  for (const Case c : {Case{TransportServiceType::rc, 0b00000'00'0},
                       Case{TransportServiceType::uc, 0b00000'01'0},
                       Case{TransportServiceType::rd, 0b00000'10'0}}) {
    SCOPED_TRACE(static_cast<int>(c.type));
    Req r;
    r.transport_service_type = c.type;
    Mad want = send_header_bytes(0x10);
    put(want, {{67, c.byte43}, {74, 0b0001'0'000}});
    expect_golden(cm_header(Method::send, AttrId::req, kTestTid), r, want);
  }
}

// Table 145 with every header field distinctive, on a ClassPortInfo GetResp.
TEST(MadGoldenHeader, EveryHeaderFieldAtItsTablePosition) {
  MadHeader h;
  h.method = Method::get_resp;
  h.status = 0x001c;
  h.class_specific = 0xbeef;
  h.transaction_id = 0x0123456789abcdef;
  h.attribute_id = AttrId::class_port_info;
  h.attribute_modifier = 0xdeadbeef;

  Mad want{};
  put(want, {
      {0, 0x01},                // BaseVersion
      {1, 0x07},                // MgmtClass: Communication Management
      {2, 0x02},                // ClassVersion
      {3, 0x81},                // R bit + Method: GetResp
      {4, 0x00}, {5, 0x1c},     // Status
      {6, 0xbe}, {7, 0xef},     // ClassSpecific
      {8, 0x01}, {9, 0x23}, {10, 0x45}, {11, 0x67},  // TransactionID, big-endian
      {12, 0x89}, {13, 0xab}, {14, 0xcd}, {15, 0xef},
      {16, 0x00}, {17, 0x01},   // AttributeID: ClassPortInfo; bytes 18-19 reserved
      {20, 0xde}, {21, 0xad}, {22, 0xbe}, {23, 0xef},  // AttributeModifier
      {24, 0x01}, {25, 0x02},   // ClassPortInfo BaseVersion 1, ClassVersion 2
  });
  expect_golden(h, ClassPortInfo{}, want);

  // Reserved bytes 18-19 are ignored on receive.
  want[18] = 0xff;
  want[19] = 0xff;
  MadHeader back;
  ASSERT_EQ(decode_header(want, back), CodecStatus{});
  EXPECT_EQ(back, h);
}

TEST(MadGoldenHeader, ResponseMatchingUsesTheLowTidHalf) {
  // The MAD layer may rewrite the upper 32 TID bits in flight (0x1234 arrives as 0x1000000001234).
  EXPECT_EQ(tid_cm_part(0x0001000000001234), 0x1234U);
  EXPECT_EQ(tid_cm_part(0xffffffff89abcdef), 0x89abcdefU);
}

}  // namespace
}  // namespace fastcm::mad::test
