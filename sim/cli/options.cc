#include "sim/cli/options.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/cli/commands.h"

namespace cs::cli {

namespace po = boost::program_options;

bool parse_options(const std::vector<std::string>& args, const po::options_description& opts,
                   std::string* config_path, po::variables_map& vm, std::ostream& help_out) {
  po::options_description hidden;
  po::positional_options_description positional;
  if (config_path != nullptr) {
    hidden.add_options()("config", po::value(config_path));
    positional.add("config", 1);
  }
  po::options_description all;
  all.add(opts).add(hidden);
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help")) {
      help_out << opts << '\n';
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return true;
}

void ConfigOptions::add_to(po::options_description& opts, const std::string& set_help) {
  // clang-format off
  opts.add_options()
      ("preset", po::value(&preset), "a built-in configuration (see clustersim presets)")
      ("hf-config", po::value(&hf_config),
       "replace the configuration's model by the one of this Hugging Face config.json (or its "
       "folder): Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen3-MoE or DeepSeek-V3; the training "
       "seq_length stays the config's. Alone (no CONFIG or --preset), the layout, cluster and "
       "seq_length are the llama3-8b preset's: TP 2 x DP 32 on 64 H100s, 8192 tokens")
      ("set", po::value(&overrides)->composing(), set_help.c_str());
  // clang-format on
}

LoadedConfig ConfigOptions::load(const std::string& path) const {
  if (path.empty() == preset.empty() && (!path.empty() || hf_config.empty()))
    throw UsageError("give either a config file or --preset NAME (or --hf-config alone)");
  return load_run_config(path, preset, overrides, hf_config);
}

namespace {

void check_writable(std::string_view option, const std::string& path) {
  namespace fs = std::filesystem;
  const auto refuse = [&](const std::string& why) {
    throw UsageError(std::string(option) + " " + path + ": " + why);
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) refuse("is a folder; give a file name");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    refuse(parent.string() + (fs::exists(parent, ec) ? " is not a folder" : " does not exist"));
  const bool existed = fs::exists(path, ec);
  // Opening is the one test that also holds for root, read-only mounts and ACLs; appending
  // leaves an existing file as it is until the report replaces it.
  errno = 0;
  if (!std::ofstream(path, std::ios::app))
    refuse(std::string("cannot be written (") + (errno ? std::strerror(errno) : "open failed") +
           ")");
  if (!existed) fs::remove(path, ec);
}

}  // namespace

CommandIo check_outputs(const CommandIo& io, std::initializer_list<OutputPath> outputs) {
  const OutputPath* to_stdout = nullptr;
  for (const auto& o : outputs) {
    if (o.path.empty() || (io.captured != nullptr && io.captured->count(o.path))) continue;
    if (o.path != "-") {
      check_writable(o.option, o.path);
      continue;
    }
    if (to_stdout != nullptr)
      throw UsageError(std::string(to_stdout->option) + " and " + std::string(o.option) +
                       " both ask for standard output (-); give one of them a file");
    to_stdout = &o;
  }
  if (to_stdout == nullptr) return io;
  CommandIo moved{io.err, io.err, io.terminal_progress, io.join_mpi, io.captured};
  moved.stdout_file = &io.out;
  return moved;
}

void write_file(const CommandIo& io, const std::string& path,
                const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    std::ostream& out = io.stdout_file != nullptr ? *io.stdout_file : io.out;
    write(out);
    out.flush();
    return;
  }
  if (io.captured != nullptr && io.captured->count(path)) {
    std::ostringstream text;
    write(text);
    (*io.captured)[path] = text.str();
    return;
  }
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  write(out);
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + path);
}

void print_to(std::ostream& out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(static_cast<std::size_t>(std::max(length, 0)) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, again);
  va_end(again);
  text.pop_back();
  out << text;
}

}  // namespace cs::cli
