// Golden MADs of every CM message but the REQ, written byte by byte from the IBTA tables (Vol. 1
// chapter 12 Tables 107-120, Table 146 for ClassPortInfo) without using the codec's layout
// declarations. Table offsets count from the CM data, which starts at MAD byte 24; bit 0 is a
// byte's most significant bit.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "tests/mad/mad_test_support.h"

namespace fastcm::mad::test {
namespace {

MadHeader send(AttrId attr) { return cm_header(Method::send, attr, kTestTid); }

// Local and Remote Communication ID (CM bytes 0-3 and 4-7) as most messages start: 0xa0a1a2a3 and
// 0xb0b1b2b3.
constexpr std::uint32_t kLocalId = 0xa0a1a2a3;
constexpr std::uint32_t kRemoteId = 0xb0b1b2b3;
void put_comm_ids(Mad& want) {
  put(want, {{24, 0xa0}, {25, 0xa1}, {26, 0xa2}, {27, 0xa3},
             {28, 0xb0}, {29, 0xb1}, {30, 0xb2}, {31, 0xb3}});
}

TEST(MadGolden, Mra) {  // Table 107
  Mra m;
  m.local_comm_id = kLocalId;
  m.remote_comm_id = kRemoteId;
  m.message_mraed = MessageKind::lap_or_none;
  m.service_timeout = 0x17;
  m.private_data = counting_bytes<kMraPrivateDataSize>(0x01);

  Mad want = send_header_bytes(0x11);
  put_comm_ids(want);
  put(want, {{32, 0b10'000000},    // CM byte 8: Message MRAed bits 0-1 = 10 (LAP), 6 reserved
             {33, 0b10111'000}});  // CM byte 9: Service Timeout bits 0-4, 3 reserved
  put_counting_bytes(want, 34, 222, 0x01);  // PrivateData, CM bytes 10-231
  expect_golden(send(AttrId::mra), m, want);
}

TEST(MadGolden, Rej) {  // Table 108
  Rej m;
  m.local_comm_id = kLocalId;
  m.remote_comm_id = kRemoteId;
  m.message_rejected = MessageKind::rep;
  m.rejected_info_length = 72;
  m.reason = RejReason::consumer_reject;
  m.ari = counting_bytes<kAdditionalInfoSize>(0x40);
  m.private_data = counting_bytes<kRejPrivateDataSize>(0x90);

  Mad want = send_header_bytes(0x12);
  put_comm_ids(want);
  put(want, {{32, 0b01'000000},    // CM byte 8: Message Rejected bits 0-1 = 01 (REP), 6 reserved
             {33, 0b1001000'0},    // CM byte 9: Rejected Info Length bits 0-6 = 72, 1 reserved
             {34, 0x00}, {35, 0x1c}});  // Reason, CM bytes 10-11: 28 (consumer reject)
  put_counting_bytes(want, 36, 72, 0x40);    // ARI, CM bytes 12-83
  put_counting_bytes(want, 108, 148, 0x90);  // PrivateData, CM bytes 84-231
  expect_golden(send(AttrId::rej), m, want);
}

TEST(MadGolden, Rep) {  // Table 110
  Rep m;
  m.local_comm_id = kLocalId;
  m.remote_comm_id = kRemoteId;
  m.local_q_key = 0x0badf00d;
  m.local_qpn = 0x345678;
  m.local_ee_context_number = 0x9abcde;
  m.starting_psn = 0x0f1e2d;
  m.set_vendor_id(0xc1c2c3);
  m.responder_resources = 0x10;
  m.initiator_depth = 0x20;
  m.target_ack_delay = 0x19;
  m.failover_accepted = FailoverAccepted::rejected;
  m.end_to_end_flow_control = true;
  m.rnr_retry_count = 5;
  m.srq = true;
  m.local_ca_guid = 0x0002c90300abcdef;
  m.private_data = counting_bytes<kRepPrivateDataSize>(0x33);
  EXPECT_EQ(m.vendor_id(), 0xc1c2c3U);

  Mad want = send_header_bytes(0x13);
  put_comm_ids(want);
  put(want, {
      {32, 0x0b}, {33, 0xad}, {34, 0xf0}, {35, 0x0d},  // Local Q_Key, CM bytes 8-11
      {36, 0x34}, {37, 0x56}, {38, 0x78},              // Local QPN, CM bytes 12-14
      {39, 0xc1},                                      // VendorID bits 23-16, CM byte 15
      {40, 0x9a}, {41, 0xbc}, {42, 0xde},              // Local EE Context Number, CM 16-18
      {43, 0xc2},                                      // VendorID bits 15-8, CM byte 19
      {44, 0x0f}, {45, 0x1e}, {46, 0x2d},              // Starting PSN, CM bytes 20-22
      {47, 0xc3},                                      // VendorID bits 7-0, CM byte 23
      {48, 0x10},                                      // Responder Resources, CM byte 24
      {49, 0x20},                                      // Initiator Depth, CM byte 25
      // CM byte 26: Target ACK Delay bits 0-4 = 11001, Failover Accepted bits 5-6 = 10,
      // End-to-End Flow Control bit 7 = 1.
      {50, 0b11001'10'1},
      // CM byte 27: RNR Retry Count bits 0-2 = 101, SRQ bit 3 = 1, 4 reserved.
      {51, 0b101'1'0000},
      {52, 0x00}, {53, 0x02}, {54, 0xc9}, {55, 0x03},  // Local CA GUID, CM bytes 28-35
      {56, 0x00}, {57, 0xab}, {58, 0xcd}, {59, 0xef},
  });
  put_counting_bytes(want, 60, 196, 0x33);  // PrivateData, CM bytes 36-231
  expect_golden(send(AttrId::rep), m, want);
}

TEST(MadGolden, Rtu) {  // Table 111
  Rtu m;
  m.local_comm_id = kLocalId;
  m.remote_comm_id = kRemoteId;
  m.private_data = counting_bytes<kRtuPrivateDataSize>(0x05);

  Mad want = send_header_bytes(0x14);
  put_comm_ids(want);
  put_counting_bytes(want, 32, 224, 0x05);  // PrivateData, CM bytes 8-231
  expect_golden(send(AttrId::rtu), m, want);
}

TEST(MadGolden, Dreq) {  // Table 112
  Dreq m;
  m.local_comm_id = kLocalId;
  m.remote_comm_id = kRemoteId;
  m.remote_qpn_eecn = 0xfedcba;
  m.private_data = counting_bytes<kDreqPrivateDataSize>(0x66);

  Mad want = send_header_bytes(0x15);
  put_comm_ids(want);
  put(want, {{32, 0xfe}, {33, 0xdc}, {34, 0xba}});  // Remote QPN/EECN, CM bytes 8-10; 11 reserved
  put_counting_bytes(want, 36, 220, 0x66);          // PrivateData, CM bytes 12-231
  expect_golden(send(AttrId::dreq), m, want);
}

TEST(MadGolden, Drep) {  // Table 113
  Drep m;
  m.local_comm_id = kLocalId;
  m.remote_comm_id = kRemoteId;
  m.private_data = counting_bytes<kDrepPrivateDataSize>(0x77);

  Mad want = send_header_bytes(0x16);
  put_comm_ids(want);
  put_counting_bytes(want, 32, 224, 0x77);  // PrivateData, CM bytes 8-231
  expect_golden(send(AttrId::drep), m, want);
}

// The LAP's alternate path orders its fields differently from the REQ's: Traffic Class at 59,
// Hop Limit at 60, Packet Rate in the low 6 bits of 61.
TEST(MadGolden, Lap) {  // Table 115
  Lap m;
  m.local_comm_id = kLocalId;
  m.remote_comm_id = kRemoteId;
  m.remote_qpn_eecn = 0x13579b;
  m.remote_cm_response_timeout = 0x12;
  m.alternate.local_port_lid = 0x4321;
  m.alternate.remote_port_lid = 0x8765;
  m.alternate.local_port_gid = counting_gid(0x50);
  m.alternate.remote_port_gid = counting_gid(0x60);
  m.alternate.flow_label = 0xfedcb;
  m.alternate.traffic_class = 0x2e;
  m.alternate.hop_limit = 0x3f;
  m.alternate.packet_rate = 17;  // 200 Gb/s
  m.alternate.sl = 0x9;
  m.alternate.subnet_local = true;
  m.alternate.local_ack_timeout = 0x0b;
  m.private_data = counting_bytes<kLapPrivateDataSize>(0xa0);

  Mad want = send_header_bytes(0x19);
  put_comm_ids(want);
  put(want, {
      // CM bytes 8-11 reserved.
      {36, 0x13}, {37, 0x57}, {38, 0x9b},  // Remote QPN/EECN, CM bytes 12-14
      {39, 0b10010'000},  // CM byte 15: Remote CM Response Timeout bits 0-4, 3 reserved
      // CM bytes 16-19 reserved.
      {44, 0x43}, {45, 0x21},              // Alternate Local Port LID, CM bytes 20-21
      {46, 0x87}, {47, 0x65},              // Alternate Remote Port LID, CM bytes 22-23
      {80, 0xfe}, {81, 0xdc}, {82, 0xb0},  // Alternate Flow Label, 20 bits over CM 56-58
      {83, 0x2e},                          // Alternate Traffic Class, CM byte 59
      {84, 0x3f},                          // Alternate Hop Limit, CM byte 60
      {85, 0b00'010001},  // CM byte 61: 2 reserved, Alternate Packet Rate bits 2-7 = 17
      {86, 0b1001'1'000},  // CM byte 62: Alternate SL bits 0-3, Subnet Local bit 4, 3 reserved
      {87, 0b01011'000},  // CM byte 63: Alternate Local ACK Timeout bits 0-4, 3 reserved
  });
  put_counting_bytes(want, 48, 16, 0x50);    // Alternate Local Port GID, CM bytes 24-39
  put_counting_bytes(want, 64, 16, 0x60);    // Alternate Remote Port GID, CM bytes 40-55
  put_counting_bytes(want, 88, 168, 0xa0);   // PrivateData, CM bytes 64-231
  expect_golden(send(AttrId::lap), m, want);
}

TEST(MadGolden, Apr) {  // Table 116
  Apr m;
  m.local_comm_id = kLocalId;
  m.remote_comm_id = kRemoteId;
  m.additional_info_length = 0x48;
  m.ap_status = AprStatus::invalid_packet_rate;
  m.additional_info = counting_bytes<kAdditionalInfoSize>(0x11);
  m.private_data = counting_bytes<kAprPrivateDataSize>(0x22);

  Mad want = send_header_bytes(0x1a);
  put_comm_ids(want);
  put(want, {{32, 0x48},    // Additional Information Length, CM byte 8
             {33, 0x0c}});  // AP Status, CM byte 9: 12 (invalid packet rate); 10-11 reserved
  put_counting_bytes(want, 36, 72, 0x11);    // Additional Information, CM bytes 12-83
  put_counting_bytes(want, 108, 148, 0x22);  // PrivateData, CM bytes 84-231
  expect_golden(send(AttrId::apr), m, want);
}

TEST(MadGolden, SidrReq) {  // Table 119
  SidrReq m;
  m.request_id = 0x0a0b0c0d;
  m.partition_key = 0xffff;
  m.service_id = 0x0000000001060cd1;
  m.private_data = counting_bytes<kSidrReqPrivateDataSize>(0x44);

  Mad want = send_header_bytes(0x17);
  put(want, {
      {24, 0x0a}, {25, 0x0b}, {26, 0x0c}, {27, 0x0d},  // RequestID, CM bytes 0-3
      {28, 0xff}, {29, 0xff},                          // Partition Key, CM bytes 4-5; 6-7 rsvd
      {32, 0x00}, {33, 0x00}, {34, 0x00}, {35, 0x00},  // ServiceID, CM bytes 8-15
      {36, 0x01}, {37, 0x06}, {38, 0x0c}, {39, 0xd1},
  });
  put_counting_bytes(want, 40, 216, 0x44);  // PrivateData, CM bytes 16-231
  expect_golden(send(AttrId::sidr_req), m, want);
}

// The SIDR_REP's ECE vendor ID is split: bits 23-8 at CM bytes 6-7, bits 7-0 at CM byte 11.
TEST(MadGolden, SidrRep) {  // Table 120
  SidrRep m;
  m.request_id = 0x0a0b0c0d;
  m.status = SidrStatus::redirect;
  m.additional_info_length = 0x48;
  m.set_vendor_id(0xd1d2d3);
  m.qpn = 0x2468ac;
  m.service_id = 0x1122334455667788;
  m.q_key = 0x80010000;
  m.class_port_info = counting_bytes<kAdditionalInfoSize>(0x55);
  m.private_data = counting_bytes<kSidrRepPrivateDataSize>(0x99);
  EXPECT_EQ(m.vendor_id(), 0xd1d2d3U);

  Mad want = send_header_bytes(0x18);
  put(want, {
      {24, 0x0a}, {25, 0x0b}, {26, 0x0c}, {27, 0x0d},  // RequestID, CM bytes 0-3
      {28, 0x04},                                      // Status, CM byte 4: redirect
      {29, 0x48},                                      // Additional Information Length, CM 5
      {30, 0xd1}, {31, 0xd2},                          // VendorID bits 23-8, CM bytes 6-7
      {32, 0x24}, {33, 0x68}, {34, 0xac},              // QPN, CM bytes 8-10
      {35, 0xd3},                                      // VendorID bits 7-0, CM byte 11
      {36, 0x11}, {37, 0x22}, {38, 0x33}, {39, 0x44},  // ServiceID, CM bytes 12-19
      {40, 0x55}, {41, 0x66}, {42, 0x77}, {43, 0x88},
      {44, 0x80}, {45, 0x01}, {46, 0x00}, {47, 0x00},  // Q_Key, CM bytes 20-23
  });
  put_counting_bytes(want, 48, 72, 0x55);    // Additional Information, CM bytes 24-95
  put_counting_bytes(want, 120, 136, 0x99);  // PrivateData, CM bytes 96-231
  expect_golden(send(AttrId::sidr_rep), m, want);
}

TEST(MadGolden, ClassPortInfo) {  // Table 146, in the CM data of a GetResp
  ClassPortInfo m;
  m.base_version = 1;
  m.class_version = 2;
  m.capability_mask = 0x0123;
  m.capability_mask2 = 0x5a5a5a5;  // 27 bits
  m.resp_time_value = 0x13;
  m.redirect_gid = counting_gid(0x70);
  m.redirect_tc = 0xe1;
  m.redirect_sl = 0xa;
  m.redirect_fl = 0xbcdef;
  m.redirect_lid = 0x0102;
  m.redirect_p_key = 0x7fff;
  m.redirect_qp = 0x000001;
  m.redirect_q_key = 0x80010000;
  m.trap_gid = counting_gid(0xc0);
  m.trap_tc = 0x5e;
  m.trap_sl = 0x3;
  m.trap_fl = 0x45678;
  m.trap_lid = 0x0304;
  m.trap_p_key = 0x8001;
  m.trap_hl = 0x40;
  m.trap_qp = 0xabcdef;
  m.trap_q_key = 0x11223344;

  Mad want{};
  put(want, {{0, 0x01}, {1, 0x07}, {2, 0x02}, {3, 0x81},  // GetResp of the CM class
             {8, 0x01}, {9, 0x02}, {10, 0x03}, {11, 0x04},
             {12, 0x05}, {13, 0x06}, {14, 0x07}, {15, 0x08},
             {17, 0x01}});  // AttributeID 0x0001: ClassPortInfo
  put(want, {
      {24, 0x01},                          // BaseVersion, byte 0
      {25, 0x02},                          // ClassVersion, byte 1
      {26, 0x01}, {27, 0x23},              // CapabilityMask, bytes 2-3
      // Bytes 4-7: CapabilityMask2 (27 bits) then RespTimeValue (5 bits):
      // 0x5a5a5a5 << 5 | 0x13 = 0xb4b4b4b3.
      {28, 0xb4}, {29, 0xb4}, {30, 0xb4}, {31, 0xb3},
      {48, 0xe1},                          // RedirectTC, byte 24
      {49, 0xab}, {50, 0xcd}, {51, 0xef},  // RedirectSL (4 bits) + RedirectFL (20), bytes 25-27
      {52, 0x01}, {53, 0x02},              // RedirectLID, bytes 28-29
      {54, 0x7f}, {55, 0xff},              // RedirectP_Key, bytes 30-31
      {57, 0x00}, {58, 0x00}, {59, 0x01},  // byte 32 reserved; RedirectQP, bytes 33-35
      {60, 0x80}, {61, 0x01}, {62, 0x00}, {63, 0x00},  // RedirectQ_Key, bytes 36-39
      {80, 0x5e},                          // TrapTC, byte 56
      {81, 0x34}, {82, 0x56}, {83, 0x78},  // TrapSL (4 bits) + TrapFL (20), bytes 57-59
      {84, 0x03}, {85, 0x04},              // TrapLID, bytes 60-61
      {86, 0x80}, {87, 0x01},              // TrapP_Key, bytes 62-63
      {88, 0x40},                          // TrapHL, byte 64
      {89, 0xab}, {90, 0xcd}, {91, 0xef},  // TrapQP, bytes 65-67
      {92, 0x11}, {93, 0x22}, {94, 0x33}, {95, 0x44},  // TrapQ_Key, bytes 68-71
  });
  put_counting_bytes(want, 32, 16, 0x70);  // RedirectGID, bytes 8-23
  put_counting_bytes(want, 64, 16, 0xc0);  // TrapGID, bytes 40-55
  expect_golden(cm_header(Method::get_resp, AttrId::class_port_info, kTestTid), m, want);
}

// private_data() views each table's PrivateData row: from its offset to the end of the MAD.
TEST(MadGolden, PrivateDataViewIsTheTablesPrivateDataRow) {
  struct Row {
    std::uint8_t attr_low;
    std::size_t mad_byte;  // CM offset of PrivateData + 24
  };
  for (const Row r : {Row{0x10, 164},   // REQ, CM byte 140
                      Row{0x11, 34},    // MRA, CM byte 10
                      Row{0x12, 108},   // REJ, CM byte 84
                      Row{0x13, 60},    // REP, CM byte 36
                      Row{0x14, 32},    // RTU, CM byte 8
                      Row{0x15, 36},    // DREQ, CM byte 12
                      Row{0x16, 32},    // DREP, CM byte 8
                      Row{0x17, 40},    // SIDR_REQ, CM byte 16
                      Row{0x18, 120},   // SIDR_REP, CM byte 96
                      Row{0x19, 88},    // LAP, CM byte 64
                      Row{0x1a, 108}}) {  // APR, CM byte 84
    SCOPED_TRACE(int{r.attr_low});
    const Mad wire = send_header_bytes(r.attr_low);
    const std::span<const std::uint8_t> view = private_data(wire);
    EXPECT_EQ(view.data(), wire.data() + r.mad_byte);
    EXPECT_EQ(view.size(), kMadSize - r.mad_byte);
  }
  Mad cpi = send_header_bytes(0x01);
  cpi[3] = 0x81;  // GetResp
  EXPECT_TRUE(private_data(cpi).empty());  // ClassPortInfo carries no private data
}

}  // namespace
}  // namespace fastcm::mad::test
