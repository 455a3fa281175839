// Reads a user's input file whole, after checking that it is a regular file of bounded size, so
// that /dev/zero, a FIFO or a huge file is refused with a reason instead of filling memory or
// blocking. Every reader of configs, JSON, Hugging Face config.json, traces and comm-groups files
// goes through here.
#pragma once

#include <cstdint>
#include <string>

namespace cs {

// Limits by kind of input, each far above any real file of that kind.
// Protobuf text configs (runs, topologies, GPU and stack profiles, validation cases): the largest
// preset is 20 KB.
inline constexpr std::uint64_t kMaxTextConfigBytes = std::uint64_t{16} << 20;
// JSON written by hand or by PyTorch (Hugging Face config.json is a few KB; a comm-groups file of
// 2^21 ranks in five dimensions is about 80 MB of rank numbers).
inline constexpr std::uint64_t kMaxJsonBytes = std::uint64_t{128} << 20;
// Tables of numbers (a routing histogram of 256 experts over 61 layers is about 200 KB).
inline constexpr std::uint64_t kMaxTableBytes = std::uint64_t{64} << 20;
// Binary protobuf traces (ours and Chakra's): one protobuf message cannot exceed 2 GiB.
inline constexpr std::uint64_t kMaxTraceBytes = (std::uint64_t{1} << 31) - 1;

struct InputFile {
  bool opened = false;  // false: missing or not permitted (callers may word that themselves)
  std::string error;    // non-empty: cannot open, refused or unreadable, "<path>: <reason>"
  std::string bytes;
  bool ok() const { return opened && error.empty(); }
};

// Opens without blocking (a FIFO with no writer would block a plain open), refuses anything but a
// regular file (after following links) and files above `max_bytes`, then reads at most
// `max_bytes` (a file that grows while read, or a /proc file that reports size 0, is refused when
// it passes the limit). `what` names the limit in the message ("protobuf text config").
InputFile read_input_file(const std::string& path, std::uint64_t max_bytes,
                          const std::string& what);

// Whether `path` names something (any file type) without opening it: a rank-numbered series of
// files ends at the first missing number.
bool input_path_exists(const std::string& path);

}  // namespace cs
