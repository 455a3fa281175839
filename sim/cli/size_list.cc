#include "sim/cli/size_list.h"

#include <charconv>
#include <stdexcept>

namespace cs::cli {

Bytes parse_size(std::string_view text) {
  const std::string item(text);
  int64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || number < 0) throw std::invalid_argument("bad size '" + item + "'");
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  if (unit.ends_with("iB"))
    unit.remove_suffix(2);
  else if (unit.ends_with("B"))
    unit.remove_suffix(1);
  int shift = 0;
  if (unit == "K" || unit == "k")
    shift = 10;
  else if (unit == "M")
    shift = 20;
  else if (unit == "G")
    shift = 30;
  else if (unit == "T")
    shift = 40;
  else if (!unit.empty())
    throw std::invalid_argument("bad size unit in '" + item + "' (use K, M, G or T)");
  if (number > (int64_t{1} << (62 - shift)))
    throw std::invalid_argument("size '" + item + "' is too large");
  return number << shift;
}

std::vector<Bytes> parse_size_list(std::string_view list) {
  std::vector<Bytes> sizes;
  while (!list.empty()) {
    const auto comma = list.find(',');
    sizes.push_back(parse_size(list.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  if (sizes.empty()) throw std::invalid_argument("empty size list");
  return sizes;
}

std::string format_size(Bytes bytes) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kUnits[u];
}

}  // namespace cs::cli
