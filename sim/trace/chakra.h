// Chakra execution traces (one .et file per rank): import as an explicit workload, and export.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "proto/chakra_et.pb.h"
#include "sim/compute/kernel_cost.h"
#include "sim/exec/executor.h"
#include "sim/run/step_simulation.h"
#include "sim/trace/comm_groups.h"

namespace cs::trace {

// One rank's file as stored: its metadata and nodes in file order.
struct ChakraRank {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
};

// Parses one .et file: varint32-length-prefixed messages, GlobalMetadata first, then Nodes;
// gzip-compressed input is inflated first. Throws TraceError naming `file`, `rank`, the node (when
// one is being read) and the reason.
ChakraRank parse_chakra_rank(std::string_view bytes, const std::string& file, int32_t rank);

// Builds one dataflow program per rank. COMP nodes take duration_micros when set, else the
// roofline of num_ops and tensor_size on `cost`'s GPU (a memory-bound kernel: the larger of FLOPs
// over peak and bytes over HBM bandwidth, plus launch overhead), kept as a kernel so that a
// replay on another GPU re-times it. MEM_LOAD / MEM_STORE move tensor_size bytes through HBM off
// the compute stream; a BARRIER is a 4-byte all-reduce (what torch.distributed.barrier runs on
// NCCL). A collective spans the ranks of its pg_name in `groups`, all ranks when `groups` is
// empty or the node names no pg_name. `files[r]` names rank r in errors.
exec::ExplicitWorkload chakra_to_workload(const std::vector<ChakraRank>& ranks,
                                          const std::vector<std::string>& files,
                                          const compute::KernelCostModel& cost,
                                          const CommGroups& groups);

// Reads PREFIX.0.et, PREFIX.1.et, ... until a file is missing, and converts them.
exec::ExplicitWorkload read_chakra(const std::string& prefix, const compute::KernelCostModel& cost,
                                   const CommGroups& groups);

// One program per rank with absolute peers and explicit groups: a layout step as other tools see
// it.
exec::ExplicitWorkload expand_layout(const run::PreparedStep& step);

// Writes PREFIX.<rank>.et for every rank and PREFIX.comm_groups.json (pg_name i is group i).
// Stream order becomes ctrl_deps; exact durations also go in an int64 attribute `duration_ps`,
// which this reader prefers to the whole microseconds of duration_micros.
void write_chakra(const exec::ExplicitWorkload& workload, const std::string& prefix);

}  // namespace cs::trace
