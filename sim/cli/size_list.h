// Parses human sizes such as "1K,64M,1G" (binary multiples, as nccl-tests does) into bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/core/units.h"

namespace cs::cli {

// "512", "1K", "4KiB", "64M", "1G", "2T" (multiples of 1024; a trailing "B" or "iB" is allowed).
// Throws std::invalid_argument naming the bad item.
Bytes parse_size(std::string_view text);
std::vector<Bytes> parse_size_list(std::string_view comma_separated);
// The inverse for tables: 1073741824 -> "1G", 1536 -> "1536".
std::string format_size(Bytes bytes);

}  // namespace cs::cli
