// Every numeric field of RunConfig, found through the protobuf descriptors so that a field added
// later is covered without editing this test, set to the values that break naive code (0, -1,
// 2^31, 1e308, NaN, +/-inf): each must give a ConfigError naming the field or a report that passes
// report::check_report. Nothing else: no crash, no other exception, no number that cannot be true.
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>

#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/field_override.h"
#include "sim/report/report_check.h"
#include "sim/run/step_simulation.h"
#include "sim/workload/model_math.h"
#include "tests/support/run_fixtures.h"

namespace cs {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

struct NumericField {
  std::string path;
  FieldDescriptor::CppType type;
};

// Singular sub-messages are entered; repeated messages cannot be set with --set and have their
// own readers (stack profile kernels). resolved_stack is an output: prepare_step overwrites it.
void collect(const Descriptor& d, const std::string& prefix, std::vector<NumericField>& out) {
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    const std::string path = prefix + f.name();
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (!f.is_repeated() && path != "resolved_stack")
          collect(*f.message_type(), path + ".", out);
        break;
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT:
        out.push_back({path, f.cpp_type()});
        break;
      default:
        break;
    }
  }
}

std::vector<std::string> values_for(FieldDescriptor::CppType type) {
  switch (type) {
    case FieldDescriptor::CPPTYPE_INT32:
      return {"0", "-1", "2147483647"};  // 2^31 itself does not fit: the parser's own error
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return {"0", "-1", "2147483648"};
    default:
      return {"0", "-1", "2147483648", "1e308", "-1e308", "nan", "inf", "-inf"};
  }
}

// The base a field is tried on: the small Llama, or a small MoE / MLA model for fields that only
// a model with those parts reads, so that the error met is the field's own and not a missing
// sibling's. Ideal network: the values under test are not the network's.
clustersim::RunConfig base_for(const std::string& path) {
  std::vector<std::string> o = {"network=IDEAL"};
  if (path.starts_with("model.moe.")) {
    for (const char* s :
         {"model.moe.num_experts=8", "model.moe.top_k=2", "model.moe.expert_ffn_hidden_size=1024",
          "parallel.dp=2", "parallel.ep=2", "parallel.global_batch_size=4"})
      o.push_back(s);
  }
  if (path.starts_with("model.mla.")) {
    for (const char* s :
         {"model.mla.kv_lora_rank=512", "model.mla.qk_nope_head_dim=128",
          "model.mla.qk_rope_head_dim=64", "model.mla.v_head_dim=128", "model.num_kv_heads=0"})
      o.push_back(s);
  }
  if (path.starts_with("offload.")) o.push_back("offload.optimizer=CPU");
  if (path.starts_with("variability.gpu_speed.slow_speeds"))
    o.push_back("variability.gpu_speed.slow_ranks=1");
  if (path.starts_with("variability.links.slow_nic_factors"))
    o.push_back("variability.links.slow_nic_ranks=1");
  return testing_support::small_llama(o);
}

TEST(NumericFields, EveryValueIsRefusedByNameOrGivesATrueReport) {
  std::vector<NumericField> fields;
  collect(*clustersim::RunConfig::descriptor(), "", fields);
  ASSERT_GT(fields.size(), 80u);  // the walk found the config's fields, not an empty message
  int simulated = 0, refused = 0;
  for (const auto& field : fields) {
    for (const std::string& value : values_for(field.type)) {
      SCOPED_TRACE(field.path + "=" + value);
      clustersim::RunConfig config = base_for(field.path);
      try {
        apply_override(config, field.path + "=" + value);
        const report::StepReport r = run::simulate_step(config, "test");
        report::check_report(r);  // simulate_step checks it too; this test must not rely on it
        ++simulated;
      } catch (const ConfigError& e) {
        ++refused;
        EXPECT_NE(std::string(e.what()).find(field.path), std::string::npos)
            << "the error does not name " << field.path << ": " << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a ConfigError: " << e.what();
      }
    }
  }
  // Both outcomes happen: the test can tell a refused value from an accepted one.
  EXPECT_GT(simulated, 0);
  EXPECT_GT(refused, 0);
}

// At a million tokens attention is nearly all of the work. Counted over the whole s x s square it
// gave MFU 104.7% on H100 and 110.7% on A100, more FLOP/s than the GPUs have; the causal kernels
// compute half of it, and model FLOPs now count that half.
TEST(NumericFields, LongSequenceMfuStaysBelowThePeak) {
  for (const char* gpu : {"h100", "a100"}) {
    SCOPED_TRACE(gpu);
    const auto config = testing_support::small_llama(
        {"model.num_layers=1", "model.seq_length=1048576", "parallel.dp=1",
         "parallel.global_batch_size=1", "network=IDEAL", std::string("cluster.gpu=") + gpu});
    const report::StepReport r = run::simulate_step(config, "test");
    EXPECT_GT(r.mfu, 0.3);  // a real figure, not a zero that passes trivially
    EXPECT_LE(r.mfu, 1.0);
    EXPECT_LE(r.hfu, 1.0);
  }
}

TEST(NumericFields, CausalAttentionCountsHalfTheScores) {
  auto model = testing_support::small_llama().model();
  const double causal = workload::attention_flops_per_token(model);
  model.set_causal(false);
  EXPECT_DOUBLE_EQ(causal, workload::attention_flops_per_token(model) / 2);
}

}  // namespace
}  // namespace cs
