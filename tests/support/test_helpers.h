// Helpers shared by the test binaries: running the CLI in-process and catching config errors.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/config/config_error.h"

namespace cs::testing_support {

// Whether this binary was built with AddressSanitizer (scripts/sanitize.sh), which runs the suite
// again at a tenth of its speed or less.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

// What one in-process `clustersim ARGS...` printed and returned.
struct Outcome {
  int code;
  std::string out;
  std::string err;
};

inline Outcome run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "clustersim");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  const int code = cli::run_main(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {code, out.str(), err.str()};
}

// Writes `text` to a file of that name in the test's temporary folder and returns its path.
// A path for a file named `name` in a folder of this test process's own: CTest runs tests in
// parallel, and two writing one file race.
inline std::string temp_path(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "clustersim-" + std::to_string(::getpid()) + "/";
  std::filesystem::create_directories(dir);
  return dir + name;
}

inline std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// The whole content of the file at `path` ("" if it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `fn` and returns the ConfigError message it throws ("" if none).
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace cs::testing_support
