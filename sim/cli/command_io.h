// Where a subcommand writes: its standard output and error, and the output files that a caller
// (the Python module) takes back as text instead.
#pragma once

#include <cstdarg>
#include <map>
#include <ostream>
#include <string>

namespace cs::cli {

struct CommandIo {
  std::ostream& out;
  std::ostream& err;
  // Progress lines redrawn on a terminal's stderr, and joining the MPI world of an mpirun launch:
  // what a command-line user wants, not a library caller running points on its own threads.
  bool terminal_progress = true;
  bool join_mpi = true;
  // Output paths (--json, --csv, ...) whose text goes here, keyed by path, instead of to a file.
  std::map<std::string, std::string>* captured = nullptr;
  // Where an output path of "-" writes; null: `out`. check_outputs points it at the real standard
  // output when it moves the human report to `err`.
  std::ostream* stdout_file = nullptr;
};

// printf into a stream, for the reports that were written with printf.
[[gnu::format(printf, 2, 3)]] void print_to(std::ostream& out, const char* format, ...);

}  // namespace cs::cli
