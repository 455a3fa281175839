// Reads protobuf text-format configuration files, reporting syntax errors as file:line:column.
#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "sim/config/config_error.h"

namespace cs {

// Parses `text` into `out` (cleared first). Throws ConfigError "<source>:<line>:<column>: <reason>"
// on the first syntax error, counting lines and columns from 1 as editors do.
void parse_text_proto(std::string_view text, const std::string& source_name,
                      google::protobuf::Message* out);

// The whole content of the file at `path`; throws ConfigError naming `path` if it cannot be read.
std::string read_text_file(const std::string& path);

}  // namespace cs
