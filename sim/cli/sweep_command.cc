// `clustersim sweep`: the cartesian product of config variations, on threads and MPI ranks.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "sim/cli/commands.h"
#include "sim/cli/mpi_world.h"
#include "sim/cli/options.h"
#include "sim/cli/progress.h"
#include "sim/config/config_error.h"
#include "sim/config/run_config.h"
#include "sim/core/batch.h"
#include "sim/run/sweep.h"
#include "sim/run/sweep_output.h"

namespace cs::cli {

namespace po = boost::program_options;

namespace {

// What `clustersim sweep` was asked, as its options give it.
struct SweepArgs {
  std::string path, csv, json;
  std::vector<std::string> vary;
  ConfigOptions config;
  int jobs = 0;
};

// Adds every option of `clustersim sweep` to `opts`, each writing into `a`.
void add_sweep_options(po::options_description& opts, SweepArgs& a) {
  a.config.add_to(opts, "override a field for every point, e.g. --set network=IDEAL (repeatable)");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("vary", po::value(&a.vary)->composing(),
       "FIELD=V1,V2,...: values a field takes (repeatable); separate with ';' when a value "
       "holds commas (parallel.layers_per_stage=8,8;4,12)")
      ("csv", po::value(&a.csv), "write the rows as CSV to this file (-: to stdout)")
      ("json", po::value(&a.json),
       "write the rows (and the skipped points) as JSON to this file (-: to stdout)")
      ("jobs,j", po::value(&a.jobs),
       "points simulated at once per process (default: the cores, shared by local MPI ranks)");
  // clang-format on
}

// The --vary axes, checked against the base config; throws UsageError for a bad one.
std::vector<run::SweepAxis> parse_sweep_axes(const clustersim::RunConfig& base,
                                             const std::vector<std::string>& vary) {
  std::vector<run::SweepAxis> axes;
  try {
    for (const auto& v : vary) axes.push_back(run::parse_sweep_axis(v));
    run::check_sweep_axes(base, axes);
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  return axes;
}

// Simulates this rank's share of the `total` points, with a progress bar on rank 0's terminal.
std::vector<run::SweepRow> run_rank_sweep_points(const CommandIo& io, const LoadedConfig& loaded,
                                                 const std::vector<run::SweepAxis>& axes,
                                                 std::size_t total, int jobs, const World& world) {
  const std::vector<std::size_t> mine = rank_share(total, world.rank(), world.size());
  PointProgress progress(io.terminal_progress && world.rank() == 0 && stderr_is_terminal());
  progress.update(0, mine.size());
  return run::run_sweep_points(loaded.config, loaded.source, axes, mine, jobs,
                               [&](std::size_t done, std::size_t n) { progress.update(done, n); });
}

// Every rank's rows, as gathered text, back in point order.
std::vector<run::SweepRow> merge_sweep_rows(const std::vector<std::string>& gathered,
                                            std::size_t total) {
  std::vector<run::SweepRow> rows(total);
  for (const std::string& line : gathered_lines(gathered)) {
    auto row = run::parse_sweep_row(line);
    const std::size_t index = row.index;
    rows.at(index) = std::move(row);
  }
  return rows;
}

// The table, then the CSV and JSON files asked for.
void write_sweep_outputs(const CommandIo& io, const SweepArgs& a, const std::string& source,
                         const std::vector<run::SweepAxis>& axes,
                         const std::vector<run::SweepRow>& rows) {
  run::print_sweep_table(io.out, axes, rows);
  if (!a.csv.empty())
    write_file(io, a.csv, [&](std::ostream& out) { run::write_sweep_csv(out, axes, rows); });
  if (!a.json.empty()) {
    write_file(io, a.json,
               [&](std::ostream& out) { run::write_sweep_json(out, source, axes, rows); });
  }
}

// Runs the sweep on this rank; rank 0 writes every output and returns the exit status.
int run_sweep_on_rank(const CommandIo& io, const SweepArgs& a, const LoadedConfig& loaded,
                      const std::vector<run::SweepAxis>& axes, const World& world,
                      std::chrono::steady_clock::time_point start) {
  const std::size_t total = run::sweep_size(axes);
  const auto local = run_rank_sweep_points(io, loaded, axes, total, a.jobs, world);
  std::string text;
  for (const auto& row : local) text += run::serialize_sweep_row(row) + '\n';
  const auto gathered = world.gather(text);
  if (world.rank() != 0) return 0;

  const std::vector<run::SweepRow> rows = merge_sweep_rows(gathered, total);
  write_sweep_outputs(io, a, loaded.source, axes, rows);
  std::size_t skipped = 0;
  for (const auto& r : rows) skipped += r.ok() ? 0 : 1;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_to(io.err, "%zu points (%zu skipped) in %.1f s, %d thread(s) x %d process(es)\n", total,
           skipped, wall, a.jobs, world.size());
  // A script looping over sweeps must not take a table of nothing but errors for results.
  if (skipped == total) {
    print_to(io.err,
             "clustersim sweep: error: every point was skipped (each 'skipped' line says why)\n");
    return 1;
  }
  return 0;
}

}  // namespace

int sweep_command(const std::vector<std::string>& args, CommandIo& given_io) {
  SweepArgs a;
  po::options_description opts(
      "usage: clustersim sweep CONFIG --vary FIELD=V1,V2,... [--vary ...] [options]\n"
      "       clustersim sweep --preset NAME --vary FIELD=V1,V2,... [options]\n\n"
      "Simulates one training step for every point of the cartesian product of the --vary\n"
      "values (the last --vary changes fastest) and prints one row per point. Points that fail\n"
      "validation are reported and skipped; when every point is, it exits 1. Points run on\n"
      "--jobs threads; under mpirun they are divided among the ranks and rank 0 writes the same\n"
      "output a single process would.\n\n"
      "example:\n  clustersim sweep --preset llama3-70b \\\n"
      "    --vary parallel.schedule=GPIPE,ONE_F_ONE_B,ZB_H1,ZB_H2 \\\n"
      "    --vary parallel.global_batch_size=256,512 --csv sweep.csv\n\noptions");
  add_sweep_options(opts, a);
  po::variables_map vm;
  if (!parse_options(args, opts, &a.path, vm, given_io.out)) return 0;
  CommandIo io = check_outputs(given_io, {{"--csv", a.csv}, {"--json", a.json}});
  if (a.vary.empty()) throw UsageError("give at least one --vary FIELD=V1,V2,...");
  if (vm.count("jobs") && a.jobs < 1) throw UsageError("--jobs must be at least 1");

  const LoadedConfig loaded = a.config.load(a.path);
  const std::vector<run::SweepAxis> axes = parse_sweep_axes(loaded.config, a.vary);
  World world(io.join_mpi);
  if (a.jobs == 0) a.jobs = world.local_jobs();
  const auto start = std::chrono::steady_clock::now();
  try {
    return run_sweep_on_rank(io, a, loaded, axes, world, start);
  } catch (const std::exception& e) {
    if (world.size() == 1) throw;
    std::fprintf(stderr, "clustersim sweep (rank %d): error: %s\n", world.rank(), e.what());
    world.abort();
  }
}

}  // namespace cs::cli
