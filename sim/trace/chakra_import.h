// How a Chakra trace from PyTorch is imported (options for its quirks) and what the import read,
// dropped and why (the summary `clustersim replay --chakra` prints).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "sim/core/units.h"

namespace cs::trace {

enum class CpuOps : uint8_t {
  kHostThread,  // is_cpu_op nodes take their duration on one host thread per rank, in order
  kSkip,        // they take no time; their dependencies still hold
};

struct ChakraImportOptions {
  // A dependency on a node the rank's file does not have (the converter removes nodes but keeps
  // edges to them) is dropped and counted, and so is an edge from a GPU kernel back to the CPU
  // operator that launched it (or one before it) on a cycle; with strict_deps both are errors.
  bool strict_deps = false;
  CpuOps cpu_ops = CpuOps::kHostThread;
  // Where the groups passed to the import came from, for messages ("" when none were passed: then
  // the trace's own process_group:init metadata is used, else every collective spans all ranks).
  std::string groups_source;
};

// Counts over all ranks.
struct ChakraSummary {
  int32_t ranks = 0;
  std::string schema;  // GlobalMetadata's schema attribute, or its version
  uint64_t nodes = 0;
  uint64_t gpu_kernels = 0;      // COMP nodes on the GPU compute stream
  uint64_t memory_nodes = 0;     // MEM_LOAD / MEM_STORE
  uint64_t cpu_ops = 0;          // is_cpu_op nodes (wrappers included)
  uint64_t cpu_ops_skipped = 0;  // of those, run in no time (--cpu-ops skip)
  Time host_time;                // summed duration of the CPU ops that ran on host threads
  uint64_t metadata_nodes = 0;
  uint64_t sends = 0, recvs = 0;
  std::map<std::string, uint64_t> collectives;  // by Chakra comm type name
  uint64_t per_peer_all_to_alls = 0;            // ALL_TO_ALL with split sizes
  uint64_t single_rank_collectives = 0;         // over a group of one rank: no traffic, no time
  uint64_t dangling_ctrl_deps = 0, dangling_data_deps = 0;
  // Edges from a GPU kernel back to the CPU operator that launched it (or one that ran before
  // it), cut to break the cycles chakra's trace linker writes; the first few, named.
  uint64_t launch_edges_cut = 0;
  std::vector<std::string> cut_edges;
  uint64_t wrappers_paired = 0;   // record_param_comms / c10d / nccl: nodes with a GPU collective
  uint64_t wrappers_dropped = 0;  // such nodes without comm attributes nor a GPU collective
  std::string groups_from;        // "", a file, or "process_group:init metadata"
  std::size_t groups = 0;
  // The first few dropped items, each naming file, rank, node and why.
  std::vector<std::string> examples;
  static constexpr std::size_t kMaxExamples = 5;
  void note(std::string what) {
    if (examples.size() < kMaxExamples) examples.push_back(std::move(what));
  }
  void note_cut(std::string what) {
    if (cut_edges.size() < kMaxExamples) cut_edges.push_back(std::move(what));
  }
};

// One screen: what was read, what runs where, what was dropped and why.
void print_chakra_summary(std::ostream& out, const ChakraSummary& s);

}  // namespace cs::trace
