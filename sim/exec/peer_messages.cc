#include "sim/exec/peer_messages.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace cs::exec {

using workload::Op;
using workload::OpKind;

LayoutPeers::LayoutPeers(const workload::Layout& layout, ProgramOfRank program_of)
    : layout_(layout), program_of_(std::move(program_of)) {}

PeerPosted LayoutPeers::post(int32_t rank, uint32_t op) {
  const Op& o = program_of_(rank).ops[op];
  const int32_t peer = layout_.with_stage(rank, o.peer_stage);
  const bool sending = o.kind == OpKind::kSend;
  const int32_t sender = sending ? rank : peer;
  const uint64_t key = static_cast<uint64_t>(sender) << 32 | o.tag;
  auto [it, fresh] = waiting_.try_emplace(key, Post{rank, op});
  if (fresh) return {};
  // Both ends have posted: the transfer starts now.
  const Post other = it->second;
  waiting_.erase(it);
  auto msg = std::make_shared<PeerMessage>(
      PeerMessage{sender, sending ? op : other.op, sending ? peer : rank, sending ? other.op : op});
  return {std::move(msg), {}, {}, {}};
}

std::size_t ExplicitPeers::KeyHash::operator()(const Key& k) const {
  return std::hash<uint64_t>()(
      k.tag * 0x9E3779B97F4A7C15ull ^
      (static_cast<uint64_t>(k.sender) << 32 | static_cast<uint32_t>(k.receiver)));
}

ExplicitPeers::ExplicitPeers(int32_t world, ProgramOfRank program_of)
    : world_(world), program_of_(std::move(program_of)) {}

PeerPosted ExplicitPeers::post(int32_t rank, uint32_t op) {
  const Op& o = program_of_(rank).ops[op];
  const int32_t peer = o.peer_rank;
  if (peer < 0 || peer >= world_) {
    PeerPosted out;
    out.refused = Post{rank, op};
    out.why = "peer rank " + std::to_string(peer) + " does not exist";
    return out;
  }
  const bool sending = o.kind == OpKind::kSend;
  const Key key{sending ? rank : peer, sending ? peer : rank, o.tag};
  return sending ? send(rank, op, key) : receive(rank, op, key);
}

PeerPosted ExplicitPeers::send(int32_t rank, uint32_t op, const Key& key) {
  PeerPosted out;
  out.transfer = std::make_shared<PeerMessage>(PeerMessage{rank, op, key.receiver});
  Channel& channel = channels_[key];
  if (!channel.recvs.empty()) {
    const Post recv = channel.recvs.front();
    channel.recvs.pop_front();
    if (!mismatch(*out.transfer, recv, out)) out.transfer->recv_op = recv.op;
  } else {
    channel.sends.push_back(out.transfer);
  }
  if (channel.sends.empty() && channel.recvs.empty()) channels_.erase(key);
  return out;
}

PeerPosted ExplicitPeers::receive(int32_t rank, uint32_t op, const Key& key) {
  PeerPosted out;
  Channel& channel = channels_[key];
  if (channel.sends.empty()) {
    channel.recvs.push_back({rank, op});
    return out;
  }
  // First in, first out: the oldest message on the channel is this receive's.
  const auto msg = channel.sends.front();
  channel.sends.pop_front();
  if (channel.sends.empty() && channel.recvs.empty()) channels_.erase(key);
  if (mismatch(*msg, {rank, op}, out)) return out;
  msg->recv_op = op;
  if (msg->arrived) out.ends_now = Post{rank, op};
  return out;
}

bool ExplicitPeers::mismatch(const PeerMessage& msg, const Post& recv, PeerPosted& out) const {
  const Bytes sent = program_of_(msg.sender).ops[msg.send_op].bytes;
  const Bytes expected = program_of_(recv.rank).ops[recv.op].bytes;
  if (sent == expected) return false;
  out.refused = recv;
  out.why = "send of " + std::to_string(sent) + " bytes from rank " + std::to_string(msg.sender) +
            " met a receive of " + std::to_string(expected) + " bytes on rank " +
            std::to_string(recv.rank);
  return true;
}

std::vector<Post> ExplicitPeers::unreceived() const {
  std::vector<Post> sends;
  for (const auto& entry : channels_)
    for (const auto& msg : entry.second.sends) sends.push_back({msg->sender, msg->send_op});
  std::sort(sends.begin(), sends.end(), [](const Post& a, const Post& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.op < b.op;
  });
  return sends;
}

}  // namespace cs::exec
