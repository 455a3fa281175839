#include "sim/cli/options.h"

#include <fstream>
#include <iostream>
#include <stdexcept>

#include "sim/cli/commands.h"

namespace cs::cli {

namespace po = boost::program_options;

bool parse_options(const std::vector<std::string>& args, const po::options_description& opts,
                   std::string* config_path, po::variables_map& vm) {
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
      std::cout << opts << '\n';
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
       "seq_length stays the config's")
      ("set", po::value(&overrides)->composing(), set_help.c_str());
  // clang-format on
}

LoadedConfig ConfigOptions::load(const std::string& path) const {
  if (path.empty() == preset.empty())
    throw UsageError("give either a config file or --preset NAME");
  return load_run_config(path, preset, overrides, hf_config);
}

void write_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  write(out);
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace cs::cli
