#include "sim/config/config_diff.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <charconv>
#include <string>

namespace cs {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Shortest text that reads back to the same double, as the reports print numbers.
std::string diff_number_text(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// The value of `f` in `m` as --set takes it; `i` indexes a repeated field, -1 a singular one.
std::string diff_value_text(const Message& m, const FieldDescriptor& f, int i) {
  const Reflection& r = *m.GetReflection();
  const bool rep = i >= 0;
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(rep ? r.GetRepeatedInt32(m, &f, i) : r.GetInt32(m, &f));
    case FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(rep ? r.GetRepeatedInt64(m, &f, i) : r.GetInt64(m, &f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return std::to_string(rep ? r.GetRepeatedUInt32(m, &f, i) : r.GetUInt32(m, &f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(rep ? r.GetRepeatedUInt64(m, &f, i) : r.GetUInt64(m, &f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return diff_number_text(rep ? r.GetRepeatedDouble(m, &f, i) : r.GetDouble(m, &f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return diff_number_text(rep ? r.GetRepeatedFloat(m, &f, i) : r.GetFloat(m, &f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r.GetRepeatedBool(m, &f, i) : r.GetBool(m, &f)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return (rep ? r.GetRepeatedEnum(m, &f, i) : r.GetEnum(m, &f))->name();
    case FieldDescriptor::CPPTYPE_STRING:
      return rep ? r.GetRepeatedString(m, &f, i) : r.GetString(m, &f);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "";
}

std::string diff_field_text(const Message& m, const FieldDescriptor& f) {
  if (!f.is_repeated()) return diff_value_text(m, f, -1);
  std::string s;
  const int n = m.GetReflection()->FieldSize(m, &f);
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + diff_value_text(m, f, i);
  return s;
}

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
    const std::string a = diff_field_text(from, f), b = diff_field_text(to, f);
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
