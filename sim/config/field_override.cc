#include "sim/config/field_override.h"

#include <google/protobuf/descriptor.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <limits>

#include "sim/config/config_error.h"

namespace cs {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// `where` is the option and the path, "--set parallel.pp", as the user typed them.
[[noreturn]] void fail(std::string_view where, const std::string& why) {
  throw ConfigError(std::string(where) + ": " + why);
}

std::string field_names(const google::protobuf::Descriptor& d) {
  std::string names;
  for (int i = 0; i < d.field_count(); ++i) names += (i ? ", " : "") + d.field(i)->name();
  return names;
}

int64_t parse_int(std::string_view where, const std::string& text, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) fail(where, "'" + text + "' is not an integer");
  if (v < lo || v > hi)
    fail(where, text + " is out of range for this field [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
  return v;
}

// The whole uint64 range (a seed may be 2^64 - 1). strtoull would take "-1" as 2^64 - 1, so a
// sign is refused first.
uint64_t parse_uint(std::string_view where, const std::string& text, uint64_t hi) {
  errno = 0;
  char* end = nullptr;
  const bool digits = !text.empty() && text[0] >= '0' && text[0] <= '9';
  const unsigned long long v = digits ? std::strtoull(text.c_str(), &end, 10) : 0;
  if (!digits || *end != '\0') {
    if (!text.empty() && text[0] == '-') fail(where, text + " is negative; this field is unsigned");
    fail(where, "'" + text + "' is not an integer");
  }
  if (errno == ERANGE || v > hi) fail(where, text + " is out of range for this field");
  return v;
}

double parse_double(std::string_view where, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') fail(where, "'" + text + "' is not a number");
  return v;
}

bool parse_bool(std::string_view where, const std::string& text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  fail(where, "'" + text + "' is not true or false");
}

void set_value(Message& m, const FieldDescriptor& f, std::string_view where,
               const std::string& text) {
  const Reflection& r = *m.GetReflection();
  const bool rep = f.is_repeated();
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      const auto v = static_cast<int32_t>(parse_int(
          where, text, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
      rep ? r.AddInt32(&m, &f, v) : r.SetInt32(&m, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      const int64_t v = parse_int(where, text, std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max());
      rep ? r.AddInt64(&m, &f, v) : r.SetInt64(&m, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: {
      const bool u32 = f.cpp_type() == FieldDescriptor::CPPTYPE_UINT32;
      const uint64_t v = parse_uint(
          where, text,
          u32 ? std::numeric_limits<uint32_t>::max() : std::numeric_limits<uint64_t>::max());
      if (u32) {
        rep ? r.AddUInt32(&m, &f, static_cast<uint32_t>(v))
            : r.SetUInt32(&m, &f, static_cast<uint32_t>(v));
      } else {
        rep ? r.AddUInt64(&m, &f, v) : r.SetUInt64(&m, &f, v);
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      const double v = parse_double(where, text);
      rep ? r.AddDouble(&m, &f, v) : r.SetDouble(&m, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const auto v = static_cast<float>(parse_double(where, text));
      rep ? r.AddFloat(&m, &f, v) : r.SetFloat(&m, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      const bool v = parse_bool(where, text);
      rep ? r.AddBool(&m, &f, v) : r.SetBool(&m, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      rep ? r.AddString(&m, &f, text) : r.SetString(&m, &f, text);
      break;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* e = f.enum_type()->FindValueByName(text);
      if (e == nullptr) {
        std::string names;
        for (int i = 0; i < f.enum_type()->value_count(); ++i)
          names += (i ? ", " : "") + f.enum_type()->value(i)->name();
        fail(where, "'" + text + "' is not one of " + names);
      }
      rep ? r.AddEnum(&m, &f, e) : r.SetEnum(&m, &f, e);
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      fail(where, "names a message, not a value; set one of its fields: " +
                      field_names(*f.message_type()));
  }
}

// One value of field `f` (element `index` of a repeated field, or -1) as --set writes it.
std::string value_text(const Message& m, const FieldDescriptor& f, int index) {
  const Reflection& r = *m.GetReflection();
  const bool rep = index >= 0;
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(rep ? r.GetRepeatedInt32(m, &f, index) : r.GetInt32(m, &f));
    case FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(rep ? r.GetRepeatedInt64(m, &f, index) : r.GetInt64(m, &f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return std::to_string(rep ? r.GetRepeatedUInt32(m, &f, index) : r.GetUInt32(m, &f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(rep ? r.GetRepeatedUInt64(m, &f, index) : r.GetUInt64(m, &f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const double v = f.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE
                           ? (rep ? r.GetRepeatedDouble(m, &f, index) : r.GetDouble(m, &f))
                           : (rep ? r.GetRepeatedFloat(m, &f, index) : r.GetFloat(m, &f));
      // The shortest text that reads back to the same value: plan's run lines must reproduce
      // the layout exactly.
      char buf[32];
      const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
      return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r.GetRepeatedBool(m, &f, index) : r.GetBool(m, &f)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_STRING:
      return rep ? r.GetRepeatedString(m, &f, index) : r.GetString(m, &f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return (rep ? r.GetRepeatedEnum(m, &f, index) : r.GetEnum(m, &f))->name();
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return rep || r.HasField(m, &f) ? "set" : "unset";
  }
  return "";
}

}  // namespace

std::string field_value_text(const Message& m, const FieldDescriptor& f) {
  if (!f.is_repeated()) return value_text(m, f, -1);
  std::string joined;
  const int n = m.GetReflection()->FieldSize(m, &f);
  for (int i = 0; i < n; ++i) joined += (i ? "," : "") + value_text(m, f, i);
  return joined;
}

std::string field_text(const Message& message, std::string_view path) {
  const Message* m = &message;
  std::string_view rest = path;
  for (;;) {
    const auto dot = rest.find('.');
    const std::string name(rest.substr(0, dot));
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(name);
    if (f == nullptr) {
      throw ConfigError(std::string(path) + ": no field '" + name + "' in " +
                        m->GetDescriptor()->name());
    }
    if (dot == std::string_view::npos) return field_value_text(*m, *f);
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || f->is_repeated())
      throw ConfigError(std::string(path) + ": '" + name + "' has no sub-fields");
    m = &m->GetReflection()->GetMessage(*m, f);
    rest.remove_prefix(dot + 1);
  }
}

void apply_override(Message& message, std::string_view assignment, std::string_view option) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw ConfigError(std::string(option) + " " + std::string(assignment) +
                      ": expected path=value, e.g. parallel.pp=8");
  }
  const std::string_view path = assignment.substr(0, eq);
  const std::string value(assignment.substr(eq + 1));
  const std::string where = std::string(option) + " " + std::string(path);
  Message* m = &message;
  std::string_view rest = path;
  for (;;) {
    const auto dot = rest.find('.');
    const std::string name(rest.substr(0, dot));
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(name);
    if (f == nullptr) {
      fail(where, "no field '" + name + "' in " + m->GetDescriptor()->name() +
                      " (fields: " + field_names(*m->GetDescriptor()) + ")");
    }
    if (dot == std::string_view::npos) {
      if (f->is_repeated()) {
        m->GetReflection()->ClearField(m, f);
        std::string_view items = value;
        while (!items.empty()) {
          const auto comma = items.find(',');
          set_value(*m, *f, where, std::string(items.substr(0, comma)));
          if (comma == std::string_view::npos) break;
          items.remove_prefix(comma + 1);
        }
      } else {
        set_value(*m, *f, where, value);
      }
      return;
    }
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || f->is_repeated()) {
      fail(where, "'" + name + "' is not a message field, so it has no sub-fields");
    }
    m = m->GetReflection()->MutableMessage(m, f);
    rest.remove_prefix(dot + 1);
  }
}

}  // namespace cs
