// `clustersim sweep`: the cartesian product of config variations, on threads and MPI ranks.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "sim/cli/commands.h"
#include "sim/cli/mpi_world.h"
#include "sim/cli/options.h"
#include "sim/cli/progress.h"
#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/run/sweep.h"
#include "sim/run/sweep_output.h"

namespace cs::cli {

namespace po = boost::program_options;

int sweep_command(const std::vector<std::string>& args, CommandIo& given_io) {
  std::string path, csv, json;
  std::vector<std::string> vary;
  ConfigOptions config;
  int jobs = 0;
  po::options_description opts(
      "usage: clustersim sweep CONFIG --vary FIELD=V1,V2,... [--vary ...] [options]\n"
      "       clustersim sweep --preset NAME --vary FIELD=V1,V2,... [options]\n\n"
      "Simulates one training step for every point of the cartesian product of the --vary\n"
      "values (the last --vary changes fastest) and prints one row per point. Points that fail\n"
      "validation are reported and skipped; when every point is, it exits 1. Points run on\n"
      "--jobs threads; under mpirun they are divided among the ranks and rank 0 writes the same\n"
      "output a single process would.\n\n"
      "example:\n  clustersim sweep --preset llama3-70b \\\n"
      "    --vary parallel.schedule=GPIPE,ONE_F_ONE_B,INTERLEAVED,ZB_H1 \\\n"
      "    --vary parallel.global_batch_size=256,512 --csv sweep.csv\n\noptions");
  config.add_to(opts, "override a field for every point, e.g. --set network=IDEAL (repeatable)");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("vary", po::value(&vary)->composing(),
       "FIELD=V1,V2,...: values a field takes (repeatable); separate with ';' when a value "
       "holds commas (parallel.layers_per_stage=8,8;4,12)")
      ("csv", po::value(&csv), "write the rows as CSV to this file (-: to stdout)")
      ("json", po::value(&json),
       "write the rows (and the skipped points) as JSON to this file (-: to stdout)")
      ("jobs,j", po::value(&jobs),
       "points simulated at once per process (default: the cores, shared by local MPI ranks)");
  // clang-format on
  po::variables_map vm;
  if (!parse_options(args, opts, &path, vm, given_io.out)) return 0;
  CommandIo io = check_outputs(given_io, {{"--csv", csv}, {"--json", json}});
  if (vary.empty()) throw UsageError("give at least one --vary FIELD=V1,V2,...");
  if (vm.count("jobs") && jobs < 1) throw UsageError("--jobs must be at least 1");

  const LoadedConfig loaded = config.load(path);
  std::vector<run::SweepAxis> axes;
  try {
    for (const auto& v : vary) axes.push_back(run::parse_sweep_axis(v));
    run::check_sweep_axes(loaded.config, axes);
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }

  World world(io.join_mpi);
  if (jobs == 0) jobs = world.local_jobs();
  const auto start = std::chrono::steady_clock::now();
  try {
    // Round robin: neighbouring points often cost alike, so every rank gets a fair share.
    const std::size_t total = run::sweep_size(axes);
    std::vector<std::size_t> mine;
    for (std::size_t i = static_cast<std::size_t>(world.rank()); i < total;
         i += static_cast<std::size_t>(world.size()))
      mine.push_back(i);
    PointProgress progress(io.terminal_progress && world.rank() == 0 && stderr_is_terminal());
    progress.update(0, mine.size());
    const auto local =
        run::run_sweep_points(loaded.config, loaded.source, axes, mine, jobs,
                              [&](std::size_t done, std::size_t n) { progress.update(done, n); });

    std::string text;
    for (const auto& row : local) text += run::serialize_sweep_row(row) + '\n';
    const auto gathered = world.gather(text);
    if (world.rank() != 0) return 0;

    std::vector<run::SweepRow> rows(total);
    for (const auto& chunk : gathered) {
      std::istringstream in(chunk);
      for (std::string line; std::getline(in, line);) {
        auto row = run::parse_sweep_row(line);
        const std::size_t index = row.index;
        rows.at(index) = std::move(row);
      }
    }
    run::print_sweep_table(io.out, axes, rows);
    if (!csv.empty())
      write_file(io, csv, [&](std::ostream& out) { run::write_sweep_csv(out, axes, rows); });
    if (!json.empty()) {
      write_file(io, json,
                 [&](std::ostream& out) { run::write_sweep_json(out, loaded.source, axes, rows); });
    }
    std::size_t skipped = 0;
    for (const auto& r : rows) skipped += r.ok() ? 0 : 1;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    print_to(io.err, "%zu points (%zu skipped) in %.1f s, %d thread(s) x %d process(es)\n", total,
             skipped, wall, jobs, world.size());
    // A script looping over sweeps must not take a table of nothing but errors for results.
    if (skipped == total) {
      print_to(io.err, "clustersim sweep: error: every point was skipped (reasons above)\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    if (world.size() == 1) throw;
    std::fprintf(stderr, "clustersim sweep (rank %d): error: %s\n", world.rank(), e.what());
    world.abort();
  }
}

}  // namespace cs::cli
