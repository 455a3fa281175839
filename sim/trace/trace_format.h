// Our protobuf workload trace: conversion from and to prepared steps and explicit workloads, and
// reading and writing trace files.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "proto/trace.pb.h"
#include "sim/exec/executor.h"
#include "sim/run/step_simulation.h"

namespace cs::trace {

// Unreadable, corrupt or inconsistent input: the message names the file (and rank, op or node)
// and the reason.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Traces whose programs vary by rank (all-to-all-v, expert times by EP rank) are version 3, the
// rest version 1, so that builds which read only version 1 refuse what they would misread.
// Version 2 wrote no AllToAllV.deduplicated: its node-limited all-to-alls were relayed and
// deduplicated per server, DeepEP's way, and are read back so.
inline constexpr uint32_t kPlainFormatVersion = 1;
inline constexpr uint32_t kDeepEpImpliedVersion = 2;
inline constexpr uint32_t kFormatVersion = 3;

// A layout trace: one program per pipeline stage, the config and what the report needs.
clustersim::trace::Trace to_trace(const run::PreparedStep& step);
// An explicit workload (an imported trace): one program per distinct rank program.
clustersim::trace::Trace to_trace(const exec::ExplicitWorkload& workload,
                                  const std::string& source);

// What a trace holds: a prepared step when it carries a config, an explicit workload otherwise.
struct LoadedTrace {
  std::optional<run::PreparedStep> step;
  std::optional<exec::ExplicitWorkload> workload;
  std::string source;  // the producer's note of where an imported trace came from
};
// Validates everything the simulator relies on (indices, streams, cycles); throws TraceError
// naming `file`.
LoadedTrace from_trace(const clustersim::trace::Trace& trace, const std::string& file);

// Parses serialized bytes with no 64 MiB cap (a whole cluster's trace may be larger).
clustersim::trace::Trace parse_trace(std::string_view bytes, const std::string& file);
clustersim::trace::Trace read_trace_file(const std::string& path);
void write_trace_file(const clustersim::trace::Trace& trace, const std::string& path);

// Re-times every compute op that records its kernel for `gpu` (explicit workloads; prepared steps
// are re-timed by run::simulate_prepared).
void retime_workload(exec::ExplicitWorkload& workload, const std::string& gpu);

}  // namespace cs::trace
