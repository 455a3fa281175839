// The executor's explicit point-to-point messages (imported traces): peers named by the trace.
#include "sim/exec/executor.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

namespace cs::exec {

using workload::Dim;
using workload::Op;
using workload::OpKind;

void Executor::arrive_explicit_p2p(int32_t rank, uint32_t op) {
  const Op& o = program_of(rank).ops[op];
  const int32_t peer = o.peer_rank;
  if (peer < 0 || peer >= layout_.world()) {
    block(rank, op, "peer rank " + std::to_string(peer) + " does not exist");
    return;
  }
  const bool sending = o.kind == OpKind::kSend;
  const P2pKey key{sending ? rank : peer, sending ? peer : rank, o.tag};
  P2pChannel& channel = p2p_queues_[key];
  auto mismatch = [&](int32_t send_rank, uint32_t send_op, int32_t recv_rank, uint32_t recv_op) {
    const Bytes sent = program_of(send_rank).ops[send_op].bytes;
    const Bytes expected = program_of(recv_rank).ops[recv_op].bytes;
    if (sent == expected) return false;
    const std::string why = "send of " + std::to_string(sent) + " bytes from rank " +
                            std::to_string(send_rank) + " met a receive of " +
                            std::to_string(expected) + " bytes on rank " +
                            std::to_string(recv_rank);
    block(recv_rank, recv_op, why);
    return true;
  };
  if (!sending) {
    if (channel.sends.empty()) {
      channel.recvs.push_back({rank, op});
      return;
    }
    // First in, first out: the oldest message on the channel is this receive's.
    const auto msg = channel.sends.front();
    channel.sends.pop_front();
    if (channel.sends.empty() && channel.recvs.empty()) p2p_queues_.erase(key);
    if (mismatch(msg->sender, msg->send_op, rank, op)) return;
    msg->recv_op = op;
    if (msg->arrived) sim_.schedule_in(Time{}, [this, rank, op] { complete(rank, op); });
    return;
  }
  auto msg = std::make_shared<P2pMessage>(P2pMessage{rank, op, peer});
  if (!channel.recvs.empty()) {
    const PendingP2p recv = channel.recvs.front();
    channel.recvs.pop_front();
    if (!mismatch(rank, op, recv.rank, recv.op)) msg->recv_op = recv.op;
  } else {
    channel.sends.push_back(msg);
  }
  if (channel.sends.empty() && channel.recvs.empty()) p2p_queues_.erase(key);
  ++comm_.p2p_messages;
  comm_.by_op[static_cast<int>(coll::Op::kSendRecv)] += o.bytes;
  comm_.by_dim[static_cast<int>(o.dim)] += o.bytes;
  change_load(rank, CommPath::kPointToPoint, +1);
  if (peer != rank) change_load(peer, CommPath::kPointToPoint, +1);
  auto arrived = [this, msg, started = sim_.now()] {
    change_load(msg->sender, CommPath::kPointToPoint, -1);
    if (msg->receiver != msg->sender) change_load(msg->receiver, CommPath::kPointToPoint, -1);
    msg->arrived = true;
    ranks_[msg->receiver].last_transfer_start = started;
    complete(msg->sender, msg->send_op);
    if (msg->recv_op != UINT32_MAX) complete(msg->receiver, msg->recv_op);
  };
  if (peer == rank)
    sim_.schedule_in(Time{}, std::move(arrived));  // a copy within one GPU: no network
  else
    network_.send(gpu_of(rank), gpu_of(peer), o.bytes, std::move(arrived));
}

}  // namespace cs::exec
