#include "sim/report/json.h"

#include <charconv>
#include <cmath>

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

void append_scalar(std::string& out, const Json& j) {
  if (j.is_number_float()) return append_double(out, j.get<double>());
  out += j.dump(kOneLine, ' ', false, Json::error_handler_t::replace);
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
      append_scalar(out, Json(it.key()));
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
