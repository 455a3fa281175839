#include "sim/config/config_diff.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <string>

#include "sim/config/field_override.h"

namespace cs {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

void diff_messages(const Message& from, const Message& to, const std::string& prefix,
                   std::vector<std::string>& out) {
  const auto* d = to.GetDescriptor();
  for (int k = 0; k < d->field_count(); ++k) {
    const FieldDescriptor& f = *d->field(k);
    const std::string path = prefix + f.name();
    // Written when a step is prepared and recomputed from the fields above it by every run.
    if (path == "resolved_stack") continue;
    if (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      // Messages of messages (repeated, maps) are not what a layout search changes.
      if (f.is_repeated()) continue;
      diff_messages(from.GetReflection()->GetMessage(from, &f),
                    to.GetReflection()->GetMessage(to, &f), path + ".", out);
      continue;
    }
    const std::string a = field_value_text(from, f), b = field_value_text(to, f);
    if (a != b) out.push_back(path + "=" + b);
  }
}

}  // namespace

std::vector<std::string> override_diff(const clustersim::RunConfig& from,
                                       const clustersim::RunConfig& to) {
  std::vector<std::string> out;
  diff_messages(from, to, "", out);
  return out;
}

}  // namespace cs
