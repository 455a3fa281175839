// Reading JSON input with nlohmann-json: one way to word a parse error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace cs {

// nlohmann's message without its "[json.exception.parse_error.101] " tag, e.g. "parse error at
// line 2, column 9: syntax error while parsing value - unexpected ']'; expected ...".
inline std::string json_error_reason(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const auto tag_end = what.find("] ");
  return what.rfind('[', 0) == 0 && tag_end != std::string::npos ? what.substr(tag_end + 2) : what;
}

}  // namespace cs
