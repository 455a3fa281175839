// Model values of the mixture-of-experts cases: grouped GEMMs and expert-parallel all-to-alls.
#pragma once

#include <string>

#include "proto/validation.pb.h"

namespace cs::validation {

// Achieved TFLOP/s of the grouped kernel: its FLOPs over compute::grouped_gemm_time (launch
// included). Throws ConfigError for an unknown GPU profile.
double grouped_gemm_tflops(const clustersim::GroupedGemmCase& g);

// Field checks, throwing ConfigError "<where>: grouped_gemm.<field> ...".
void check_grouped_gemm(const clustersim::GroupedGemmCase& g, const std::string& where);

// The case's metric in GB/s, from the all-to-all's time on an idle network (proto AllToAllCase).
// `wire_costs` is effects.moe_all_to_all_wire (tests switch it off); DeepEP's token cost
// (effects.deepep_token_cost) counts either way. Throws ConfigError for an unknown or too small
// topology.
double all_to_all_gbps(const clustersim::AllToAllCase& a, bool wire_costs = true);

// Field checks, throwing ConfigError "<where>: all_to_all.<field> ...".
void check_all_to_all(const clustersim::AllToAllCase& a, const std::string& where);

}  // namespace cs::validation
