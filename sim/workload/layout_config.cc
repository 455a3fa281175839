#include "sim/workload/layout_config.h"

#include <stdexcept>
#include <string>

namespace cs::workload {
namespace {

const google::protobuf::FieldDescriptor& int_field(const google::protobuf::Message& message,
                                                   std::string_view name) {
  const auto* field = message.GetDescriptor()->FindFieldByName(std::string(name));
  if (field == nullptr || field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_INT32)
    throw std::logic_error(message.GetTypeName() + " has no int32 field " + std::string(name));
  return *field;
}

int32_t int_of(const google::protobuf::Message& message, std::string_view name) {
  return message.GetReflection()->GetInt32(message, &int_field(message, name));
}

}  // namespace

int32_t expert_tp_of(const google::protobuf::Message& message) {
  const int32_t etp = int_of(message, "etp");
  return etp == 0 ? int_of(message, "tp") : etp;
}

bool pipeline_outermost_of(const google::protobuf::Message& message) {
  const auto* descriptor = message.GetDescriptor();
  const auto* reflection = message.GetReflection();
  if (const auto* order = descriptor->FindFieldByName("rank_order"))
    return reflection->GetEnumValue(message, order) == 1;  // TP_CP_DP_PP
  if (const auto* outer = descriptor->FindFieldByName("pipeline_outermost"))
    return reflection->GetBool(message, outer);
  return false;
}

DimSizes dim_sizes(const google::protobuf::Message& message) {
  DimSizes sizes{};
  for (const DimInfo& d : kDims)
    if (d.dim != Dim::kEdp) sizes[static_cast<std::size_t>(d.dim)] = int_of(message, d.key);
  auto size = [&](Dim d) { return int64_t{sizes[static_cast<std::size_t>(d)]}; };
  const int64_t stage = size(Dim::kTp) * size(Dim::kCp) * size(Dim::kDp);
  const int64_t experts = int64_t{expert_tp_of(message)} * size(Dim::kEp);
  sizes[static_cast<std::size_t>(Dim::kEdp)] =
      experts > 0 && stage > 0 && stage % experts == 0 ? static_cast<int32_t>(stage / experts) : 0;
  return sizes;
}

void set_dim_sizes(const DimSizes& sizes, google::protobuf::Message& message) {
  for (const DimInfo& d : kDims)
    if (d.dim != Dim::kEdp)
      message.GetReflection()->SetInt32(&message, &int_field(message, d.key),
                                        sizes[static_cast<std::size_t>(d.dim)]);
}

int64_t world_of(const DimSizes& sizes) {
  int64_t world = 1;
  for (const DimInfo& d : kDims) {
    const int32_t s = sizes[static_cast<std::size_t>(d.dim)];
    if (d.expert) continue;
    if (s < 1) return 0;
    world *= s;
  }
  return world;
}

}  // namespace cs::workload
