// The tables Op::varies indexes (expert times by EP rank, all-to-all-v sizes): to and from our
// trace format, and the checks a program's tables must pass before it runs.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "proto/trace.pb.h"
#include "sim/workload/program.h"

namespace cs::trace {

// Shares of an all-to-all-v must sum to 1 within this (they are normalised by a division).
inline constexpr double kShareSumTolerance = 1e-6;

// Whether any op of `program` varies by rank (then the trace needs format version 2).
bool has_varying_ops(const workload::Program& program);

// Writes program.rank_times and program.all_to_alls; ops' varies are written with the ops.
void varying_to_proto(const workload::Program& program, clustersim::trace::Program& out);
// Reads them; throws TraceError naming `where`, the row or entry and the field.
void varying_from_proto(const clustersim::trace::Program& in, workload::Program& program,
                        const std::string& where);

// What is wrong with an all-to-all-v entry ("share sums to 0.5, not 1"), if anything: shares
// finite, non-negative and summing to 1, copies_per_token > 0, top_k >= 1, max_nodes >= 0.
std::optional<std::string> all_to_all_v_problem(const workload::AllToAllV& v);

// Every op's varies names an entry of its kind's table (compute: rank_times; an ALL_TO_ALL:
// all_to_alls; nothing else varies), rows are non-empty with non-negative durations, and every
// all_to_alls entry passes all_to_all_v_problem.
void check_varying(const workload::Program& program, const std::string& where);

// The sizes that depend on where a program runs: every rank_times row has `row_length` entries
// and every all-to-all-v op's shares one per member of its group (`group_size(op)`).
void check_varying_sizes(const workload::Program& program, const std::string& where,
                         std::size_t row_length, const std::string& row_reason,
                         const std::function<std::size_t(const workload::Op&)>& group_size);

// Op `op` as errors name it: its index and label.
std::string op_name(const workload::Program& program, uint32_t op);

}  // namespace cs::trace
