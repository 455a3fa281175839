#include "sim/workload/layout_config.h"

#include <stdexcept>
#include <string>

namespace cs::workload {
namespace {

const google::protobuf::FieldDescriptor& field_of(const google::protobuf::Message& message,
                                                  const DimInfo& d) {
  const auto* field = message.GetDescriptor()->FindFieldByName(std::string(d.key));
  if (field == nullptr || field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_INT32)
    throw std::logic_error(message.GetTypeName() + " has no int32 field " + std::string(d.key));
  return *field;
}

}  // namespace

DimSizes dim_sizes(const google::protobuf::Message& message) {
  DimSizes sizes{};
  for (const DimInfo& d : kDims)
    sizes[static_cast<std::size_t>(d.dim)] =
        message.GetReflection()->GetInt32(message, &field_of(message, d));
  return sizes;
}

void set_dim_sizes(const DimSizes& sizes, google::protobuf::Message& message) {
  for (const DimInfo& d : kDims)
    message.GetReflection()->SetInt32(&message, &field_of(message, d),
                                      sizes[static_cast<std::size_t>(d.dim)]);
}

int64_t world_of(const DimSizes& sizes) {
  int64_t world = 1;
  for (const int32_t s : sizes) {
    if (s < 1) return 0;
    world *= s;
  }
  return world;
}

}  // namespace cs::workload
