// Who a send or receive meets: the neighbouring stage a layout names, or the peer rank an imported
// trace names. Each post tells the executor which transfer to start and which op to end.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/exec/collective_groups.h"
#include "sim/workload/layout.h"

namespace cs::exec {

// One message from a send op to a receive op.
struct PeerMessage {
  int32_t sender;
  uint32_t send_op;
  int32_t receiver;
  uint32_t recv_op = kNoOp;  // no receive has met it yet
  bool arrived = false;
  static constexpr uint32_t kNoOp = UINT32_MAX;
};

// What a post led to; any of these may be set.
struct PeerPosted {
  std::shared_ptr<PeerMessage> transfer;  // a message whose bytes start moving now
  std::optional<Post> ends_now;           // a receive whose message had already arrived
  std::optional<Post> refused;            // an op that can never end, with why
  std::string why;
};

class PeerMessages {
 public:
  virtual ~PeerMessages() = default;
  // `rank` posts send or receive op `op`.
  virtual PeerPosted post(int32_t rank, uint32_t op) = 0;
  // Sends whose message has met no receive (the run cannot end), by rank and op.
  virtual std::vector<Post> unreceived() const { return {}; }
};

// Pipeline transfers of a layout: a send meets the receive of the same tag on the stage it names,
// and the bytes move once both are posted (a rendezvous, as Megatron's batched p2p ops).
class LayoutPeers final : public PeerMessages {
 public:
  LayoutPeers(const workload::Layout& layout, ProgramOfRank program_of);
  PeerPosted post(int32_t rank, uint32_t op) override;

 private:
  const workload::Layout& layout_;
  ProgramOfRank program_of_;
  std::unordered_map<uint64_t, Post> waiting_;  // (sender << 32 | tag) -> the first end posted
};

// Messages of an imported trace: sends are eager, as NCCL's and ASTRA-sim's are: the transfer
// starts when the send is posted and the send ends when the bytes arrive; the receive ends once it
// is posted and its message (the oldest unreceived one between the two ranks with its tag) has
// arrived.
class ExplicitPeers final : public PeerMessages {
 public:
  ExplicitPeers(int32_t world, ProgramOfRank program_of);
  PeerPosted post(int32_t rank, uint32_t op) override;
  std::vector<Post> unreceived() const override;

 private:
  struct Key {
    int32_t sender, receiver;
    uint64_t tag;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  struct Channel {
    std::deque<std::shared_ptr<PeerMessage>> sends;  // posted, no receive yet
    std::deque<Post> recvs;                          // posted, no send yet
  };
  PeerPosted send(int32_t rank, uint32_t op, const Key& key);
  PeerPosted receive(int32_t rank, uint32_t op, const Key& key);
  // Fills `out.refused` when the message's size differs from the receive's.
  bool mismatch(const PeerMessage& msg, const Post& recv, PeerPosted& out) const;

  int32_t world_;
  ProgramOfRank program_of_;
  std::unordered_map<Key, Channel, KeyHash> channels_;
};

}  // namespace cs::exec
