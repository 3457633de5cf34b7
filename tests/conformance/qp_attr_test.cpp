// init_qp_attr: the QP attributes for INIT, RTR and RTS on both sides of a connection, every
// field and the exact mask, and the verbs values they must equal so a caller hands them to
// ibv_modify_qp unchanged.
#include <infiniband/verbs.h>  // header only: the enum values, nothing is linked

#include <tuple>
#include <utility>

#include "tests/conformance/scenario.h"

namespace fastcm::test {
namespace {

template <typename E>
constexpr std::uint32_t bits(E verbs_value) {
  return static_cast<std::uint32_t>(verbs_value);
}

static_assert(qp_mask::state == bits(IBV_QP_STATE));
static_assert(qp_mask::access_flags == bits(IBV_QP_ACCESS_FLAGS));
static_assert(qp_mask::pkey_index == bits(IBV_QP_PKEY_INDEX));
static_assert(qp_mask::port == bits(IBV_QP_PORT));
static_assert(qp_mask::qkey == bits(IBV_QP_QKEY));
static_assert(qp_mask::av == bits(IBV_QP_AV));
static_assert(qp_mask::path_mtu == bits(IBV_QP_PATH_MTU));
static_assert(qp_mask::timeout == bits(IBV_QP_TIMEOUT));
static_assert(qp_mask::retry_cnt == bits(IBV_QP_RETRY_CNT));
static_assert(qp_mask::rnr_retry == bits(IBV_QP_RNR_RETRY));
static_assert(qp_mask::rq_psn == bits(IBV_QP_RQ_PSN));
static_assert(qp_mask::max_qp_rd_atomic == bits(IBV_QP_MAX_QP_RD_ATOMIC));
static_assert(qp_mask::alt_path == bits(IBV_QP_ALT_PATH));
static_assert(qp_mask::min_rnr_timer == bits(IBV_QP_MIN_RNR_TIMER));
static_assert(qp_mask::sq_psn == bits(IBV_QP_SQ_PSN));
static_assert(qp_mask::max_dest_rd_atomic == bits(IBV_QP_MAX_DEST_RD_ATOMIC));
static_assert(qp_mask::path_mig_state == bits(IBV_QP_PATH_MIG_STATE));
static_assert(qp_mask::dest_qpn == bits(IBV_QP_DEST_QPN));

static_assert(bits(QpState::reset) == bits(IBV_QPS_RESET));
static_assert(bits(QpState::init) == bits(IBV_QPS_INIT));
static_assert(bits(QpState::rtr) == bits(IBV_QPS_RTR));
static_assert(bits(QpState::rts) == bits(IBV_QPS_RTS));
static_assert(bits(MigState::migrated) == bits(IBV_MIG_MIGRATED));
static_assert(bits(MigState::rearm) == bits(IBV_MIG_REARM));
static_assert(bits(MigState::armed) == bits(IBV_MIG_ARMED));

static_assert(qp_access::local_write == bits(IBV_ACCESS_LOCAL_WRITE));
static_assert(qp_access::remote_write == bits(IBV_ACCESS_REMOTE_WRITE));
static_assert(qp_access::remote_read == bits(IBV_ACCESS_REMOTE_READ));
static_assert(qp_access::remote_atomic == bits(IBV_ACCESS_REMOTE_ATOMIC));

static_assert(bits(IBV_MTU_256) == 1 && bits(IBV_MTU_2048) == 4 && bits(IBV_MTU_4096) == 5);  // = MTU codes

constexpr std::uint32_t kInitMask = qp_mask::state | qp_mask::access_flags | qp_mask::pkey_index | qp_mask::port;
constexpr std::uint32_t kRtrMask = qp_mask::state | qp_mask::av | qp_mask::path_mtu | qp_mask::dest_qpn |
                                   qp_mask::rq_psn | qp_mask::max_dest_rd_atomic | qp_mask::min_rnr_timer;
constexpr std::uint32_t kRtsMask = qp_mask::state | qp_mask::sq_psn | qp_mask::timeout | qp_mask::retry_cnt |
                                   qp_mask::rnr_retry | qp_mask::max_qp_rd_atomic;
constexpr std::uint32_t kAllAccess =
    qp_access::local_write | qp_access::remote_write | qp_access::remote_read | qp_access::remote_atomic;

// A CA that holds fewer RDMA reads and atomics than the connection asks for (8 each way).
constexpr CaLimits kSmallCa{.max_qp_rd_atom = 2, .max_qp_init_rd_atom = 1, .local_ca_ack_delay = 10};
constexpr std::uint64_t kGlobalPrefix = 0x2001'0db8'0000'0001;
constexpr std::uint32_t kClientPsn = 0x11'1111;
constexpr std::uint32_t kServerPsn = 0x22'2222;
constexpr PKey kPKey = 0x8001;  // index 1 in both ports' tables

// Two HCAs whose ports have kSmallCa and a second, global GID at index 1 (so a GRH path can name a
// source GID other than the default); on `link`.
loopback::LoopbackConfig small_ca_fabric(LinkLayer link) {
  loopback::LoopbackConfig cfg = loopback::LoopbackConfig::two_hcas(1);
  for (loopback::LoopbackHcaConfig& hca : cfg.hcas) {
    for (PortAttr& port : hca.ports) {
      port.ca = kSmallCa;
      port.gid_table[1] = Gid::from_parts(kGlobalPrefix, port.port_guid);
      port.gid_count = 2;
      if (link == LinkLayer::ethernet) {
        port.link_layer = LinkLayer::ethernet;
        port.lid = 0;
      }
    }
  }
  return cfg;
}

// Every field of `got` against `want`. PSNs are checked here only to be unset when outside the
// mask; their values are the subject of PsnsAndQpnsAreCrosswise.
void expect_attr(const QpAttr& got, const QpAttr& want, const char* what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.mask, want.mask) << std::hex << "got 0x" << got.mask << ", want 0x" << want.mask;
  EXPECT_EQ(got.qp_state, want.qp_state);
  EXPECT_EQ(got.path_mtu, want.path_mtu);
  EXPECT_EQ(got.path_mig_state, want.path_mig_state);
  EXPECT_EQ(got.qkey, want.qkey);
  if ((want.mask & qp_mask::rq_psn) == 0) {
    EXPECT_EQ(got.rq_psn, 0u);
  }
  if ((want.mask & qp_mask::sq_psn) == 0) {
    EXPECT_EQ(got.sq_psn, 0u);
  }
  EXPECT_EQ(got.dest_qp_num, want.dest_qp_num);
  EXPECT_EQ(got.qp_access_flags, want.qp_access_flags);
  EXPECT_EQ(got.ah_attr, want.ah_attr);
  EXPECT_EQ(got.alt_ah_attr, want.alt_ah_attr);
  EXPECT_EQ(got.pkey_index, want.pkey_index);
  EXPECT_EQ(got.alt_pkey_index, want.alt_pkey_index);
  EXPECT_EQ(got.max_rd_atomic, want.max_rd_atomic);
  EXPECT_EQ(got.max_dest_rd_atomic, want.max_dest_rd_atomic);
  EXPECT_EQ(got.min_rnr_timer, want.min_rnr_timer);
  EXPECT_EQ(got.port_num, want.port_num);
  EXPECT_EQ(got.timeout, want.timeout);
  EXPECT_EQ(got.retry_cnt, want.retry_cnt);
  EXPECT_EQ(got.rnr_retry, want.rnr_retry);
  EXPECT_EQ(got.alt_port_num, want.alt_port_num);
  EXPECT_EQ(got.alt_timeout, want.alt_timeout);
}

QpAttr init_attr(std::uint32_t access) {
  QpAttr a;
  a.mask = kInitMask;
  a.qp_state = QpState::init;
  a.qp_access_flags = access;
  a.pkey_index = 1;
  a.port_num = 1;
  return a;
}

// The address vector of a subnet-local InfiniBand path to `dlid` on SL 5 at the ports' rate.
AhAttr local_av(Lid dlid, std::uint8_t sl = 5) {
  AhAttr ah;
  ah.dlid = dlid;
  ah.sl = sl;
  ah.static_rate = 16;
  ah.port_num = 1;
  return ah;
}

// The client asks for 8 RDMA reads/atomics each way, retry 6, RNR retry 5, SL 5, MTU 2048 under
// P_Key 0x8001; the server answers 8 each way, target ACK delay 17, RNR retry 3. Both CAs hold
// kSmallCa.
class QpAttrTest : public ConnectScenario {
 protected:
  explicit QpAttrTest(LinkLayer link = LinkLayer::infiniband)
      : ConnectScenario(small_ca_fabric(link), kTestEngine) {}

  void SetUp() override {
    ConnectScenario::SetUp();
    server().react = [this](const Event& e) {
      if (e.type != EventType::req_received) return;
      server_id_ = e.id;
      if (accept_) {
        EXPECT_EQ(server().engine().send_rep(e.id, rep_), Status::ok);
      }
    };
    rep_.qpn = kServerQpn;
    rep_.starting_psn = kServerPsn;
    rep_.responder_resources = 8;
    rep_.initiator_depth = 8;
    rep_.target_ack_delay = 17;
    rep_.rnr_retry_count = 3;
  }

  [[nodiscard]] ReqParams req() const {
    ReqParams p = req_params();
    p.starting_psn = kClientPsn;
    p.retry_count = 6;
    p.rnr_retry_count = 5;
    p.primary.sl = 5;
    p.primary.mtu = 4;
    p.primary.pkey = kPKey;
    return p;
  }

  void handshake(const ReqParams& p) {
    connect(p);
    cluster_.run_for(Cluster::kSecond);
    ASSERT_EQ(state_of(client(), client_id_), "established");
    ASSERT_EQ(state_of(server(), server_id_), "established");
  }

  static QpAttr attr(Peer& peer, Id id, QpState state) {
    QpAttr a;
    EXPECT_EQ(peer.engine().init_qp_attr(id, state, a), Status::ok);
    return a;
  }
  static Status status_of(Peer& peer, Id id, QpState state) {
    QpAttr a;
    return peer.engine().init_qp_attr(id, state, a);
  }

  [[nodiscard]] Lid client_lid() const { return cluster_.client_port().lid; }
  [[nodiscard]] Lid server_lid() const { return cluster_.server_port().lid; }

  RepParams rep_;
};

TEST_F(QpAttrTest, InitOnBothSides) {
  handshake(req());
  expect_attr(attr(client(), client_id_, QpState::init), init_attr(kAllAccess), "client INIT");
  expect_attr(attr(server(), server_id_, QpState::init), init_attr(kAllAccess), "server INIT");
}

TEST_F(QpAttrTest, RtrOnBothSidesCapsResponderResourcesToTheCa) {
  handshake(req());
  QpAttr want;
  want.mask = kRtrMask;
  want.qp_state = QpState::rtr;
  want.path_mtu = 4;
  want.min_rnr_timer = 0;       // the longest RNR NAK timer, as the kernel CM sets it

  // The server's REP offers initiator depth 1 (8 asked, clamped to its max_qp_init_rd_atom 1):
  // the client serves no more than the server issues.
  want.max_dest_rd_atomic = 1;
  want.ah_attr = local_av(server_lid());
  want.dest_qp_num = kServerQpn;
  expect_attr(attr(client(), client_id_, QpState::rtr), want, "client RTR");

  want.max_dest_rd_atomic = 2;  // 8 asked, max_qp_rd_atom 2
  want.ah_attr = local_av(client_lid());
  want.dest_qp_num = kClientQpn;
  expect_attr(attr(server(), server_id_, QpState::rtr), want, "server RTR");
}

TEST_F(QpAttrTest, RtsOnBothSidesCapsInitiatorDepthToTheCa) {
  handshake(req());
  QpAttr want;
  want.mask = kRtsMask;
  want.qp_state = QpState::rts;
  want.retry_cnt = 6;
  want.max_rd_atomic = 1;  // 8 asked, max_qp_init_rd_atom 1

  // Local ACK timeouts cover the round trip and the peer's ACK delay (4.096 us * 2^t each).
  // Client: 2 * 2^14 (packet life 14) + 2^17 (the REP's target ACK delay) = 163840 <= 2^18.
  want.timeout = 18;
  want.rnr_retry = 3;  // the REP's
  expect_attr(attr(client(), client_id_, QpState::rts), want, "client RTS");

  // Server: the REQ's local ACK timeout, 2 * 2^14 + 2^10 (the client CA's ACK delay) <= 2^16.
  want.timeout = 16;
  want.rnr_retry = 5;  // the REQ's
  expect_attr(attr(server(), server_id_, QpState::rts), want, "server RTS");
}

// Each side receives at the PSN the other sends from, and addresses the other's QP. (Which of the
// two advertised PSNs is a side's receive PSN is not asserted here: see the integration notes.)
TEST_F(QpAttrTest, PsnsAndQpnsAreCrosswise) {
  handshake(req());
  const QpAttr client_rtr = attr(client(), client_id_, QpState::rtr);
  const QpAttr client_rts = attr(client(), client_id_, QpState::rts);
  const QpAttr server_rtr = attr(server(), server_id_, QpState::rtr);
  const QpAttr server_rts = attr(server(), server_id_, QpState::rts);
  EXPECT_EQ(client_rtr.rq_psn, server_rts.sq_psn);
  EXPECT_EQ(server_rtr.rq_psn, client_rts.sq_psn);
  // Each side's Starting PSN is the first PSN its own receive queue expects (kernel cm.c:
  // ib_send_cm_req takes rq_psn from its REQ, cm_req_handler takes sq_psn from the peer's).
  EXPECT_EQ(client_rtr.rq_psn, kClientPsn);
  EXPECT_EQ(client_rts.sq_psn, kServerPsn);
  EXPECT_EQ(server_rtr.rq_psn, kServerPsn);
  EXPECT_EQ(server_rts.sq_psn, kClientPsn);
  EXPECT_EQ(client_rtr.dest_qp_num, kServerQpn);
  EXPECT_EQ(server_rtr.dest_qp_num, kClientQpn);
}

TEST_F(QpAttrTest, NoResponderResourcesMeansNoRemoteReadOrAtomic) {
  rep_.initiator_depth = 0;       // the client answers no reads or atomics
  rep_.responder_resources = 0;   // nor does the server
  handshake(req());
  expect_attr(attr(client(), client_id_, QpState::init),
              init_attr(qp_access::local_write | qp_access::remote_write), "client INIT");
  expect_attr(attr(server(), server_id_, QpState::init),
              init_attr(qp_access::local_write | qp_access::remote_write), "server INIT");
  EXPECT_EQ(attr(client(), client_id_, QpState::rtr).max_dest_rd_atomic, 0);
  EXPECT_EQ(attr(client(), client_id_, QpState::rts).max_rd_atomic, 0);
}

TEST_F(QpAttrTest, UcQpGetsNoRdmaReadOrAckAttributes) {
  ReqParams p = req();
  p.qp_type = QpType::uc;
  handshake(p);
  for (auto [peer, id] : {std::pair{&client(), client_id_}, std::pair{&server(), server_id_}}) {
    const QpAttr init = attr(*peer, id, QpState::init);
    EXPECT_EQ(init.mask, kInitMask);
    EXPECT_EQ(init.qp_access_flags, qp_access::local_write | qp_access::remote_write);
    const QpAttr rtr = attr(*peer, id, QpState::rtr);
    EXPECT_EQ(rtr.mask, qp_mask::state | qp_mask::av | qp_mask::path_mtu | qp_mask::dest_qpn | qp_mask::rq_psn);
    EXPECT_EQ(rtr.max_dest_rd_atomic, 0);
    const QpAttr rts = attr(*peer, id, QpState::rts);
    EXPECT_EQ(rts.mask, qp_mask::state | qp_mask::sq_psn);
    EXPECT_EQ(rts.timeout, 0);
    EXPECT_EQ(rts.max_rd_atomic, 0);
  }
}

// A path that leaves the subnet: the address vector carries the GRH, with the source GID's index.
TEST_F(QpAttrTest, RoutedPathGivesAGlobalAddressVector) {
  ReqParams p = req();
  p.primary.local_gid = cluster_.client_port().gid_table[1];
  p.primary.remote_gid = cluster_.server_port().gid_table[1];
  p.primary.subnet_local = false;
  p.primary.hop_limit = 64;
  p.primary.flow_label = 0xABCDE;
  p.primary.traffic_class = 0x48;
  handshake(p);

  AhAttr want = local_av(server_lid());
  want.is_global = true;
  want.dgid = cluster_.server_port().gid_table[1];
  want.sgid_index = 1;
  want.hop_limit = 64;
  want.flow_label = 0xABCDE;
  want.traffic_class = 0x48;
  EXPECT_EQ(attr(client(), client_id_, QpState::rtr).ah_attr, want);

  want.dlid = client_lid();
  want.dgid = cluster_.client_port().gid_table[1];
  EXPECT_EQ(attr(server(), server_id_, QpState::rtr).ah_attr, want);
}

class RoceQpAttrTest : public QpAttrTest {
 protected:
  RoceQpAttrTest() : QpAttrTest(LinkLayer::ethernet) {}
};

// On RoCE every address vector is global, also for a subnet-local path; there are no LIDs.
TEST_F(RoceQpAttrTest, EveryAddressVectorIsGlobal) {
  ReqParams p = req();
  p.primary.local_gid = cluster_.client_port().gid_table[1];  // the server's default GID stays
  p.primary.hop_limit = 64;
  p.primary.traffic_class = 0x20;
  handshake(p);

  AhAttr want = local_av(0);
  want.is_global = true;
  want.dgid = cluster_.server_port().gid_table[0];
  want.sgid_index = 1;
  want.hop_limit = 64;
  want.traffic_class = 0x20;
  EXPECT_EQ(attr(client(), client_id_, QpState::rtr).ah_attr, want);

  want.dgid = cluster_.client_port().gid_table[1];
  want.sgid_index = 0;
  EXPECT_EQ(attr(server(), server_id_, QpState::rtr).ah_attr, want);
}

// A REQ with an alternate path: both sides load it in RTR and RTS, and RTS re-arms migration.
TEST_F(QpAttrTest, AlternatePathAndMigrationState) {
  ReqParams p = req();
  Path alt = p.primary;
  alt.sl = 7;
  alt.packet_life_time = 17;
  p.alternate = alt;
  handshake(p);

  // Client: 2 * 2^17 + 2^17 (target ACK delay) <= 2^19. Server: the REQ's alternate local ACK
  // timeout, 2 * 2^17 + 2^10 <= 2^19.
  for (auto [peer, id, dlid] : {std::tuple{&client(), client_id_, server_lid()},
                                std::tuple{&server(), server_id_, client_lid()}}) {
    SCOPED_TRACE(peer == &client() ? "client" : "server");
    for (const QpState state : {QpState::rtr, QpState::rts}) {
      const QpAttr a = attr(*peer, id, state);
      EXPECT_EQ(a.alt_ah_attr, local_av(dlid, 7));
      EXPECT_EQ(a.alt_port_num, 1);
      EXPECT_EQ(a.alt_pkey_index, 1);
      EXPECT_EQ(a.alt_timeout, 19);
      EXPECT_EQ(a.ah_attr.sl, state == QpState::rtr ? 5 : 0);  // the primary is RTR's alone
    }
    const QpAttr rtr = attr(*peer, id, QpState::rtr);
    EXPECT_EQ(rtr.mask, kRtrMask | qp_mask::alt_path);
    EXPECT_EQ(rtr.path_mig_state, MigState::migrated);  // not in RTR's mask
    const QpAttr rts = attr(*peer, id, QpState::rts);
    EXPECT_EQ(rts.mask, kRtsMask | qp_mask::alt_path | qp_mask::path_mig_state);
    EXPECT_EQ(rts.path_mig_state, MigState::rearm);
  }
}

// RTR and RTS need the REP out (passive: it names the PSN the server receives from) or in (active).
TEST_F(QpAttrTest, StatesBeforeThePeerIsKnownAreInvalid) {
  Id idle;
  ASSERT_EQ(client().engine().create_id(client().delivery(), nullptr, idle), Status::ok);
  EXPECT_EQ(status_of(client(), idle, QpState::init), Status::invalid_state);  // no path yet

  accept_ = false;
  connect(req());
  cluster_.run_for(Cluster::kSecond / 100);
  ASSERT_EQ(server().count(EventType::req_received), 1u);
  EXPECT_EQ(status_of(client(), client_id_, QpState::init), Status::ok);
  EXPECT_EQ(status_of(client(), client_id_, QpState::rtr), Status::invalid_state);
  EXPECT_EQ(status_of(client(), client_id_, QpState::rts), Status::invalid_state);
  EXPECT_EQ(status_of(server(), server_id_, QpState::init), Status::ok);
  // The passive side's receive PSN is the REP's Starting PSN: no RTR before the REP is out.
  EXPECT_EQ(status_of(server(), server_id_, QpState::rtr), Status::invalid_state);
  EXPECT_EQ(status_of(server(), server_id_, QpState::rts), Status::invalid_state);
  EXPECT_EQ(status_of(server(), server_id_, QpState::reset), Status::invalid_argument);

  complete_ = false;  // the client holds its RTU: REP received, not yet established
  ASSERT_EQ(server().engine().send_rep(server_id_, rep_), Status::ok);
  EXPECT_EQ(attr(server(), server_id_, QpState::rtr).rq_psn, rep_.starting_psn);
  EXPECT_EQ(status_of(server(), server_id_, QpState::rts), Status::ok);
  cluster_.run_for(Cluster::kSecond / 100);
  ASSERT_EQ(state_of(client(), client_id_), "rep_rcvd");
  EXPECT_EQ(status_of(client(), client_id_, QpState::rtr), Status::ok);
  EXPECT_EQ(status_of(client(), client_id_, QpState::rts), Status::ok);
}

TEST_F(QpAttrTest, DestroyedEndpointIsAStaleId) {
  handshake(req());
  ASSERT_EQ(client().engine().destroy(client_id_), Status::ok);
  ASSERT_EQ(server().engine().destroy(server_id_), Status::ok);
  for (const QpState state : {QpState::init, QpState::rtr, QpState::rts}) {
    EXPECT_EQ(status_of(client(), client_id_, state), Status::stale_id);
    EXPECT_EQ(status_of(server(), server_id_, state), Status::stale_id);
  }
}

}  // namespace
}  // namespace fastcm::test
