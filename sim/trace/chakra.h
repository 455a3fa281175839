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
#include "sim/trace/chakra_groups.h"
#include "sim/trace/chakra_import.h"

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

// Builds one dataflow program per rank. GPU COMP nodes take duration_micros when set, else the
// roofline of num_ops and tensor_size on `cost`'s GPU (a memory-bound kernel: the larger of FLOPs
// over peak and bytes over HBM bandwidth, plus launch overhead), kept as a kernel so that a
// replay on another GPU re-times it. CPU operators (is_cpu_op) take only their traced duration,
// on one host thread per rank or not at all (options.cpu_ops); the GPU kernels they launch are
// separate nodes. MEM_LOAD / MEM_STORE move tensor_size bytes through HBM off the compute stream.
// Collectives: ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER (and _BLOCK), BROADCAST, ALL_TO_ALL run their
// own schedules; REDUCE runs the broadcast's chain; BARRIER is a 4-byte all-reduce; ALL_TO_ALL with
// in_split_size, GATHER and SCATTER run as all-to-all-v transfers (each sender's own sizes). A
// collective spans the ranks of its pg_name in `groups`, else in the trace's process_group:init
// metadata, all ranks when neither has groups or the node names no pg_name; over one rank it
// takes no time. record_param_comms / c10d:: / nccl: wrappers are paired with the GPU collective
// they launch (which takes pg_name and split sizes from them when it lacks its own) or dropped.
// Dependencies on absent nodes are dropped unless options.strict_deps. A cycle is cut at each edge
// that runs from a GPU kernel back to the CPU operator that launched it (or to one that ran before
// that launcher on the host: launch_order.h), unless options.strict_deps; any other cycle is an
// error naming its nodes. `files[r]` names rank r in errors; `summary`, when given, gets the
// counts.
exec::ExplicitWorkload chakra_to_workload(const std::vector<ChakraRank>& ranks,
                                          const std::vector<std::string>& files,
                                          const compute::KernelCostModel& cost,
                                          const CommGroups& groups,
                                          const ChakraImportOptions& options,
                                          ChakraSummary* summary);
// With the default options.
exec::ExplicitWorkload chakra_to_workload(const std::vector<ChakraRank>& ranks,
                                          const std::vector<std::string>& files,
                                          const compute::KernelCostModel& cost,
                                          const CommGroups& groups);

// Every rank file of a prefix, parsed.
struct ChakraFiles {
  std::vector<ChakraRank> ranks;
  std::vector<std::string> files;
};
// Reads PREFIX.0.et, PREFIX.1.et, ... until a file is missing.
ChakraFiles read_chakra_files(const std::string& prefix);
// Reads and converts them.
exec::ExplicitWorkload read_chakra(const std::string& prefix, const compute::KernelCostModel& cost,
                                   const CommGroups& groups, const ChakraImportOptions& options,
                                   ChakraSummary* summary);
exec::ExplicitWorkload read_chakra(const std::string& prefix, const compute::KernelCostModel& cost,
                                   const CommGroups& groups);

// One program per rank with absolute peers and explicit groups: a layout step as other tools see
// it. Expert ops take their rank's duration (Chakra is per rank); all-to-all-v entries stay, and
// run as Executor::run_explicit_all_to_all_v sends them (without node-limited relays).
exec::ExplicitWorkload expand_layout(const run::PreparedStep& step);

// Writes PREFIX.<rank>.et for every rank and PREFIX.comm_groups.json (pg_name i is group i).
// Stream order becomes ctrl_deps; exact durations also go in an int64 attribute `duration_ps`,
// which this reader prefers to the whole microseconds of duration_micros. An all-to-all-v is an
// ALL_TO_ALL with in_split_size / out_split_size in bytes (its members' matching posts give the
// sizes it receives) and comm_size what it sends, as PyTorch's traces have them, plus exact
// all_to_all_v_* attributes that this reader prefers (chakra_all_to_all_v.h).
void write_chakra(const exec::ExplicitWorkload& workload, const std::string& prefix);

}  // namespace cs::trace
