// Peer messages: a layout's pipeline transfers meet at a rendezvous; an imported trace's sends are
// eager and meet their receives first in, first out.
#include "sim/exec/peer_messages.h"

#include <gtest/gtest.h>

#include <vector>

namespace cs::exec {
namespace {

using workload::Op;
using workload::OpKind;
using workload::Program;

Op message(OpKind kind, Bytes bytes, uint64_t tag, int32_t peer_stage, int32_t peer_rank = -1) {
  Op o;
  o.kind = kind;
  o.dim = workload::Dim::kPp;
  o.bytes = bytes;
  o.tag = tag;
  o.peer_stage = peer_stage;
  o.peer_rank = peer_rank;
  return o;
}

TEST(LayoutPeers, TheTransferStartsOnceBothEndsHavePosted) {
  const workload::Layout layout(1, 1, 2, 1);  // rank 0: stage 0, rank 1: stage 1
  std::vector<Program> programs(2);
  programs[0].ops = {message(OpKind::kSend, 64, 5, 1)};
  programs[1].ops = {message(OpKind::kRecv, 64, 5, 0)};
  LayoutPeers peers(layout, [&](int32_t r) -> const Program& { return programs[r]; });
  EXPECT_FALSE(peers.post(1, 0).transfer);
  const PeerPosted posted = peers.post(0, 0);
  ASSERT_TRUE(posted.transfer);
  EXPECT_EQ(posted.transfer->sender, 0);
  EXPECT_EQ(posted.transfer->send_op, 0u);
  EXPECT_EQ(posted.transfer->receiver, 1);
  EXPECT_EQ(posted.transfer->recv_op, 0u);
  EXPECT_FALSE(posted.refused);
}

struct Explicit {
  std::vector<Program> programs = std::vector<Program>(2);
  ExplicitPeers peers{2, [this](int32_t r) -> const Program& { return programs[r]; }};
};

TEST(ExplicitPeers, ASendMovesAtOnceAndItsReceiveEndsWhenPostedAfterArrival) {
  Explicit e;
  e.programs[0].ops = {message(OpKind::kSend, 64, 1, 0, 1)};
  e.programs[1].ops = {message(OpKind::kRecv, 64, 1, 0, 0)};
  const PeerPosted sent = e.peers.post(0, 0);
  ASSERT_TRUE(sent.transfer);
  EXPECT_EQ(sent.transfer->recv_op, PeerMessage::kNoOp);
  EXPECT_EQ(e.peers.unreceived(), (std::vector<Post>{{0, 0}}));
  sent.transfer->arrived = true;
  const PeerPosted received = e.peers.post(1, 0);
  EXPECT_FALSE(received.transfer);
  ASSERT_TRUE(received.ends_now);
  EXPECT_EQ(*received.ends_now, (Post{1, 0}));
  EXPECT_TRUE(e.peers.unreceived().empty());
}

TEST(ExplicitPeers, MessagesOfOneChannelMeetReceivesFirstInFirstOut) {
  Explicit e;
  e.programs[0].ops = {message(OpKind::kSend, 64, 1, 0, 1), message(OpKind::kSend, 64, 1, 0, 1)};
  e.programs[1].ops = {message(OpKind::kRecv, 64, 1, 0, 0), message(OpKind::kRecv, 64, 1, 0, 0)};
  EXPECT_FALSE(e.peers.post(1, 0).transfer);  // receive first: it waits
  const PeerPosted first = e.peers.post(0, 0);
  ASSERT_TRUE(first.transfer);
  EXPECT_EQ(first.transfer->recv_op, 0u);  // met the waiting receive
  const PeerPosted second = e.peers.post(0, 1);
  ASSERT_TRUE(second.transfer);
  EXPECT_EQ(second.transfer->recv_op, PeerMessage::kNoOp);
  EXPECT_FALSE(e.peers.post(1, 1).ends_now);  // not arrived yet
  EXPECT_EQ(second.transfer->recv_op, 1u);
}

TEST(ExplicitPeers, RefusesAnAbsentPeerAndASizeMismatch) {
  Explicit e;
  e.programs[0].ops = {message(OpKind::kSend, 64, 1, 0, 9), message(OpKind::kSend, 64, 2, 0, 1)};
  e.programs[1].ops = {message(OpKind::kRecv, 32, 2, 0, 0)};
  const PeerPosted absent = e.peers.post(0, 0);
  ASSERT_TRUE(absent.refused);
  EXPECT_EQ(absent.why, "peer rank 9 does not exist");
  EXPECT_FALSE(absent.transfer);
  EXPECT_FALSE(e.peers.post(0, 1).refused);
  const PeerPosted short_recv = e.peers.post(1, 0);
  ASSERT_TRUE(short_recv.refused);
  EXPECT_EQ(*short_recv.refused, (Post{1, 0}));
  EXPECT_EQ(short_recv.why, "send of 64 bytes from rank 0 met a receive of 32 bytes on rank 1");
}

}  // namespace
}  // namespace cs::exec
