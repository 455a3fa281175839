#include "sim/report/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace cs::report {

namespace {

constexpr int kOneLine = -1;

void append_double(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, end);
}

template <typename Integer>
void append_integer(std::string& out, Integer x) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, end);
}

// Printable ASCII without quote or backslash: the string is its own JSON text.
bool needs_no_escape(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

void append_string(std::string& out, const std::string& s) {
  if (!needs_no_escape(s)) {
    out += Json(s).dump(kOneLine, ' ', false, Json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

// Numbers and plain strings directly (a timeline has millions of them); nlohmann's dump for
// escapes, booleans and null.
void append_scalar(std::string& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::number_float:
      return append_double(out, j.get<double>());
    case Json::value_t::number_integer:
      return append_integer(out, j.get<int64_t>());
    case Json::value_t::number_unsigned:
      return append_integer(out, j.get<uint64_t>());
    case Json::value_t::string:
      return append_string(out, j.get_ref<const std::string&>());
    default:
      out += j.dump(kOneLine, ' ', false, Json::error_handler_t::replace);
  }
}

void new_line(std::string& out, int indent, int depth) {
  out += '\n';
  out.append(static_cast<std::size_t>(indent * depth), ' ');
}

// Appends `j` at nesting `depth`; `indent` spaces per level, or kOneLine.
void append(std::string& out, const Json& j, int indent, int depth) {
  if (!j.is_structured()) return append_scalar(out, j);
  const bool object = j.is_object();
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += indent == kOneLine ? ", " : ",";
    if (indent != kOneLine) new_line(out, indent, depth + 1);
    first = false;
    if (object) {
      append_string(out, it.key());
      out += ": ";
    }
    append(out, it.value(), indent, depth + 1);
  }
  if (!first && indent != kOneLine) new_line(out, indent, depth);
  out += object ? '}' : ']';
}

}  // namespace

void write_document(std::ostream& out, const Json& doc) {
  std::string text;
  append(text, doc, 2, 0);
  out << text << '\n';
}

std::string one_line(const Json& value) {
  std::string text;
  append(text, value, kOneLine, 0);
  return text;
}

}  // namespace cs::report
