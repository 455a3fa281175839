#include "sim/report/record_fields.h"

#include <charconv>
#include <stdexcept>

#include "sim/cost/failure_causes.h"
#include "sim/report/text_rows.h"
#include "sim/workload/dims.h"

namespace cs::report {

std::size_t part_count(Parts p) {
  switch (p) {
    case Parts::kDims:
      return workload::kDims.size();
    case Parts::kCauses:
      return cost::kNumFailureCauses;
    case Parts::kOne:
      break;
  }
  return 1;
}

std::size_t part_slot(Parts p, std::size_t k) {
  return p == Parts::kDims ? static_cast<std::size_t>(workload::kDims[k].dim) : k;
}

std::string_view part_key(Parts p, std::size_t k) {
  switch (p) {
    case Parts::kDims:
      return workload::kDims[k].key;
    case Parts::kCauses:
      return cost::kFailureCauses[k].name;
    case Parts::kOne:
      break;
  }
  return {};
}

std::string_view part_label(Parts p, std::size_t k) {
  return p == Parts::kDims ? workload::kDims[k].label : part_key(p, k);
}

std::string with_part(std::string_view pattern, std::string_view part) {
  std::string s(pattern);
  const std::size_t at = s.find("{}");
  if (at != std::string::npos) s.replace(at, 2, part);
  return s;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + '"';
}

std::string shortest(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

namespace {

std::vector<std::string> split_tabs(std::string_view line) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = line.find('\t', start);
    parts.emplace_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

template <typename T>
T parsed(const std::string& f, const char* what) {
  T v{};
  const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || ptr != f.data() + f.size())
    throw std::invalid_argument(std::string("record: bad ") + what + " '" + f + "'");
  return v;
}

}  // namespace

std::string& WireWriter::next() {
  if (!first_) out_.push_back('\t');
  first_ = false;
  return out_;
}

void WireWriter::put(std::string_view s) {
  std::string& out = next();
  for (const char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
}

void WireWriter::put(double v) {
  next() += shortest(v);
}

void WireWriter::put(int64_t v) {
  next() += std::to_string(v);
}

WireReader::WireReader(std::string_view line) : fields_(split_tabs(line)) {}

const std::string& WireReader::next() {
  if (pos_ >= fields_.size()) throw std::invalid_argument("record: too few fields");
  return fields_[pos_++];
}

std::string WireReader::text() {
  const std::string& s = next();
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char c = s[++i];
    out.push_back(c == 't' ? '\t' : c == 'n' ? '\n' : c);
  }
  return out;
}

double WireReader::real() {
  return parsed<double>(next(), "number");
}

int64_t WireReader::integer() {
  return parsed<int64_t>(next(), "integer");
}

namespace record_detail {

// One overload per stored type, so that each output spells every type the same way.
struct Csv {
  std::string& line;
  double unit;
  void operator()(const std::string* s) const { line += ',' + csv_field(*s); }
  void operator()(const int32_t* v) const { line += ',' + std::to_string(*v); }
  void operator()(const bool* v) const { line += *v ? ",true" : ",false"; }
  void operator()(const double* v) const { line += ',' + shortest(*v / unit); }
};

void put_csv(std::string& line, FieldRef ref, double unit) {
  std::visit(Csv{line, unit}, ref);
}

Json to_json(FieldRef ref, double unit) {
  if (auto* v = std::get_if<double*>(&ref)) return **v / unit;
  return std::visit([](const auto* v) { return Json(*v); }, ref);
}

struct Text {
  int digits;
  bool percent;
  std::string operator()(const std::string* s) const { return *s; }
  std::string operator()(const int32_t* v) const { return std::to_string(*v); }
  std::string operator()(const bool* v) const { return *v ? "yes" : "NO"; }
  std::string operator()(const double* v) const {
    return percent ? fixed(100 * *v, digits) + "%" : fixed(*v, digits);
  }
};

std::string to_text(FieldRef ref, int digits, bool percent) {
  return std::visit(Text{digits, percent}, ref);
}

struct Put {
  WireWriter& out;
  void operator()(const std::string* s) const { out.put(std::string_view(*s)); }
  void operator()(const int32_t* v) const { out.put(int64_t{*v}); }
  void operator()(const bool* v) const { out.put(int64_t{*v ? 1 : 0}); }
  void operator()(const double* v) const { out.put(*v); }
};

void put_wire(WireWriter& out, FieldRef ref) {
  std::visit(Put{out}, ref);
}

struct Get {
  WireReader& in;
  void operator()(std::string* s) const { *s = in.text(); }
  void operator()(int32_t* v) const { *v = static_cast<int32_t>(in.integer()); }
  void operator()(bool* v) const { *v = in.integer() != 0; }
  void operator()(double* v) const { *v = in.real(); }
};

void get_wire(WireReader& in, FieldRef ref) {
  std::visit(Get{in}, ref);
}

}  // namespace record_detail

}  // namespace cs::report
