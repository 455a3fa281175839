// Tests of the software stack profiles (stacks/*.textproto): every file loads, validates and cites
// the framework code of each field it sets; based_on and overrides lay fields the documented way;
// bad profiles fail naming the file and the field.
#include "sim/config/stack_profile.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include "sim/config/embedded_presets.h"
#include "tests/support/test_helpers.h"

namespace cs {
namespace {

using testing_support::error_of;
using testing_support::temp_file;

// Where a comment cites code or a publication: a path, a source file, a PR, an arXiv paper.
bool cites(const std::string& comment) {
  for (const char* mark : {"/", ".py", ".cpp", ".cc", ".cu", ".yaml", "PR #", "arXiv", "paper"})
    if (comment.find(mark) != std::string::npos) return true;
  return false;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b);
}

// Every line that sets a field carries a citing comment: its own trailing one, or the comment
// block that opens its group (a group: consecutive field lines, a blank line or a comment line
// starting the next). `sources:` lines are citations themselves.
std::vector<std::string> uncited_lines(const std::string& text) {
  std::vector<std::string> bad;
  std::istringstream in(text);
  std::string line, block;  // the comment block the current group inherits
  bool block_cites = false;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.empty()) {
      block.clear();
      block_cites = false;
      continue;
    }
    if (t[0] == '#') {
      block += t;
      block_cites = cites(block);
      continue;
    }
    if (t == "}" || t.rfind("sources:", 0) == 0) continue;
    const auto hash = t.find('#');
    const bool own = hash != std::string::npos && cites(t.substr(hash));
    if (!own && !block_cites) bad.push_back(t);
  }
  return bad;
}

TEST(StackProfile, EveryFileLoadsValidatesAndIsNamedAfterItsFile) {
  const auto names = stack_profile_names();
  for (const char* expected : {"megatron_te", "pytorch_fsdp2", "pytorch_fsdp1", "deepspeed_zero"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const StackProfile p = load_stack_profile(name);
    EXPECT_EQ(p.name(), name);
    EXPECT_FALSE(p.sources().empty());
    EXPECT_FALSE(p.description().empty());
  }
}

TEST(StackProfile, EveryFieldLineCitesTheFrameworkCode) {
  for (const auto& name : stack_profile_names()) {
    SCOPED_TRACE(name);
    const std::string text(find_preset("stacks", name)->text);
    for (const auto& line : uncited_lines(text)) ADD_FAILURE() << "uncited: " << line;
  }
  // The checker itself: an uncited line is found, a cited one passes.
  EXPECT_EQ(uncited_lines("# why\nfused_qkv: false\n").size(), 1u);
  EXPECT_TRUE(uncited_lines("# model.py: wq, wk\nfused_qkv: false\n").empty());
  EXPECT_TRUE(uncited_lines("fused_qkv: false  # model.py\n").empty());
}

TEST(StackProfile, EachStackHasExactlyOneDefaultVariant) {
  std::map<clustersim::SoftwareStack, int> defaults;
  for (const auto& name : stack_profile_names()) {
    const StackProfile p = load_stack_profile(name);
    if (p.default_variant()) ++defaults[p.stack()];
  }
  const auto* e = clustersim::SoftwareStack_descriptor();
  for (int i = 0; i < e->value_count(); ++i) {
    const auto stack = static_cast<clustersim::SoftwareStack>(e->value(i)->number());
    EXPECT_EQ(defaults[stack], 1) << e->value(i)->name();
  }
  EXPECT_EQ(default_stack_profile(clustersim::PYTORCH_FSDP), "pytorch_fsdp2");
  EXPECT_EQ(default_stack_profile(clustersim::MEGATRON_TE), "megatron_te");
}

TEST(StackProfile, MegatronTeSetsOnlyTheDefaults) {
  // Megatron-TE's file states its rules; each is stack.proto's default, which is the lowering.
  // (Its limits refuse what Megatron-Core does not run, such as op-level checkpointing.)
  StackProfile p = load_stack_profile("megatron_te");
  EXPECT_TRUE(p.gather().has_unit());  // it does state them
  for (const char* field : {"name", "stack", "default_variant", "description", "sources", "limits"})
    p.GetReflection()->ClearField(&p, p.GetDescriptor()->FindFieldByName(field));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equivalent(p, StackProfile()))
      << p.DebugString();
}

TEST(StackProfile, BasedOnLaysTheVariantOverItsBaseSlotBySlot) {
  const StackProfile fsdp2 = load_stack_profile("pytorch_fsdp2");
  const StackProfile fsdp1 = load_stack_profile("pytorch_fsdp1");
  auto rows = [](const StackProfile& p, clustersim::StackKernel::Slot slot) {
    std::vector<std::string> names;
    for (const auto& k : p.kernels())
      if (k.slot() == slot) names.push_back(k.name());
    return names;
  };
  // Model kernels come from the base; the gather copies are FSDP1's own; its copy-out is gone.
  EXPECT_EQ(rows(fsdp1, clustersim::StackKernel::NORM_FORWARD),
            rows(fsdp2, clustersim::StackKernel::NORM_FORWARD));
  EXPECT_EQ(rows(fsdp1, clustersim::StackKernel::GATHER_PROLOGUE),
            std::vector<std::string>{"fsdp1_mp_shard_copy"});
  EXPECT_TRUE(rows(fsdp1, clustersim::StackKernel::GATHER_EPILOGUE).empty());
  EXPECT_FALSE(rows(fsdp2, clustersim::StackKernel::GATHER_EPILOGUE).empty());
  // Sub-messages merge field by field; the variant is not its base's default.
  EXPECT_EQ(fsdp1.gather().forward_prefetch_units(), 1);
  EXPECT_EQ(fsdp2.gather().forward_prefetch_units(), 2);
  EXPECT_TRUE(fsdp1.gather().gather_embedding());
  EXPECT_FALSE(fsdp1.default_variant());
  EXPECT_EQ(fsdp1.limits_size(), fsdp2.limits_size());
}

// FSDP1 runs as llm-foundry configures it: Composer's DecoupledAdamW, a loop of single-tensor
// ops (80 bytes a parameter) and a per-gradient scale; FSDP2 runs torchtitan's fused AdamW (28)
// and a foreach scale, both through multi_tensor_apply.
TEST(StackProfile, EachStackStepsItsOwnOptimizerAndNorm) {
  auto slot_bytes = [](const std::string& name, clustersim::StackKernel::Slot slot) {
    double bytes = 0;
    int multi_tensor = 0;
    const StackProfile profile = load_stack_profile(name);
    for (const auto& k : profile.kernels()) {
      if (k.slot() != slot) continue;
      bytes += k.read_bytes() + k.write_bytes();
      multi_tensor += k.multi_tensor() ? 1 : 0;
    }
    return std::pair{bytes, multi_tensor};
  };
  EXPECT_EQ(slot_bytes("pytorch_fsdp1", clustersim::StackKernel::OPTIMIZER),
            (std::pair{80.0 + 8.0, 0}));
  EXPECT_EQ(slot_bytes("pytorch_fsdp2", clustersim::StackKernel::OPTIMIZER),
            (std::pair{28.0 + 8.0, 2}));
  // Their gradient norms: one read of the fp32 gradient each, FSDP1's per FlatParameter,
  // torchtitan's one _foreach_norm; DeepSpeed's through an fp64 copy of the bf16 gradient.
  EXPECT_EQ(slot_bytes("pytorch_fsdp1", clustersim::StackKernel::GRAD_NORM), (std::pair{4.0, 0}));
  EXPECT_EQ(slot_bytes("pytorch_fsdp2", clustersim::StackKernel::GRAD_NORM), (std::pair{4.0, 1}));
  EXPECT_EQ(slot_bytes("deepspeed_zero", clustersim::StackKernel::GRAD_NORM),
            (std::pair{2.0 + 8.0 + 8.0, 0}));
}

TEST(StackProfile, OverlayReplacesSlotsAndLimitsAndDropsRemovedSlots) {
  StackProfile base;
  auto* a = base.add_kernels();
  a->set_slot(clustersim::StackKernel::NORM_FORWARD);
  a->set_name("a");
  auto* b = base.add_kernels();
  b->set_slot(clustersim::StackKernel::ROPE_FORWARD);
  b->set_name("b");
  auto* l = base.add_limits();
  l->set_field("parallel.tp");
  l->add_allowed("1");
  StackProfile top;
  auto* c = top.add_kernels();
  c->set_slot(clustersim::StackKernel::NORM_FORWARD);
  c->set_name("c");
  top.add_removed_slots(clustersim::StackKernel::ROPE_FORWARD);
  auto* m = top.add_limits();
  m->set_field("parallel.tp");
  m->add_allowed("2");
  top.set_fused_qkv(false);
  overlay_stack_profile(base, top);
  ASSERT_EQ(base.kernels_size(), 1);
  EXPECT_EQ(base.kernels(0).name(), "c");
  ASSERT_EQ(base.limits_size(), 1);
  EXPECT_EQ(base.limits(0).allowed(0), "2");
  EXPECT_FALSE(base.fused_qkv());
}

TEST(StackProfile, BadProfilesFailNamingFileAndField) {
  const std::string head = "name: \"x\" stack: PYTORCH_FSDP ";
  const std::string no_extent =
      temp_file("no_extent.textproto", head + "kernels { slot: NORM_FORWARD name: \"n\" }");
  EXPECT_NE(error_of([&] { load_stack_profile(no_extent); }).find("kernels[0] (n): extent"),
            std::string::npos);
  const std::string bad_limit =
      temp_file("bad_limit.textproto",
                head + "limits { field: \"parallel.nope\" allowed: \"1\" reason: \"r\" }");
  const std::string e = error_of([&] { load_stack_profile(bad_limit); });
  EXPECT_NE(e.find("bad_limit.textproto"), std::string::npos) << e;
  EXPECT_NE(e.find("no field 'nope'"), std::string::npos) << e;
  const std::string cycle =
      temp_file("cycle.textproto",
                head + "based_on: \"" + testing_support::temp_path("cycle.textproto") + "\"");
  EXPECT_NE(error_of([&] { load_stack_profile(cycle); }).find("base themselves on each other"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_stack_profile("nope"); }).find("pytorch_fsdp2"),
            std::string::npos);  // the unknown name lists the profiles
  EXPECT_NE(error_of([&] {
              load_stack_profile(temp_file("no_stack.textproto", "name: \"x\""));
            }).find("stack must be set"),
            std::string::npos);
}

}  // namespace
}  // namespace cs
