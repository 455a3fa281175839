// The _core extension of the clustersim Python package: runs one `clustersim` subcommand in this
// process, with the GIL released, and hands back what it printed, the output files it was asked
// to keep in memory and the CLI's error line.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/cli/commands.h"

namespace py = pybind11;

namespace {

struct Outcome {
  int code = 0;
  std::string out, err;
  std::map<std::string, std::string> captured;
  std::string error;  // the line the CLI prints for an exception that ends the command
  bool usage_error = false;
};

// Runs `command` on `args` as `clustersim command args...` would, but writing to strings: each
// path of `capture` given to an output option (--json) is filled in memory instead of a file.
Outcome run_command(const cs::cli::Command& command, const std::vector<std::string>& args,
                    const std::vector<std::string>& capture) {
  Outcome r;
  for (const auto& path : capture) r.captured[path];
  std::ostringstream out, err;
  cs::cli::CommandIo io{out, err};
  io.terminal_progress = false;  // Python's stderr is not ours to redraw
  io.join_mpi = false;           // a Python process under mpirun keeps MPI to itself
  io.captured = &r.captured;
  try {
    r.code = command.run(args, io);
  } catch (const std::exception& e) {
    r.error = cs::cli::error_line(command.name, e);
    r.usage_error = dynamic_cast<const cs::cli::UsageError*>(&e) != nullptr;
    r.code = r.usage_error ? 2 : 1;
  }
  r.out = out.str();
  r.err = err.str();
  return r;
}

// (exit code, stdout, stderr, {captured path: text}, error line or "", whether a usage error).
py::tuple call(const std::string& name, const std::vector<std::string>& args,
               const std::vector<std::string>& capture) {
  const cs::cli::Command* command = cs::cli::find_command(name);
  if (command == nullptr) throw py::value_error("clustersim: unknown command '" + name + "'");
  Outcome r;
  {
    // Simulations touch no Python object, so other Python threads run meanwhile.
    py::gil_scoped_release release;
    r = run_command(*command, args, capture);
  }
  // Output is bytes from the simulator; a stray non-UTF-8 byte must not turn into a crash.
  const auto text = [](const std::string& s) {
    return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(s.data(), s.size(), "replace"));
  };
  py::dict captured;
  for (const auto& [path, contents] : r.captured) captured[text(path)] = text(contents);
  return py::make_tuple(r.code, text(r.out), text(r.err), captured, text(r.error), r.usage_error);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "clustersim's subcommands, run in-process (use the clustersim package, not this)";
  m.def("call", &call, py::arg("command"), py::arg("args"), py::arg("capture"),
        "Runs `clustersim COMMAND ARGS...`; returns (code, stdout, stderr, captured, error, "
        "usage_error), where captured maps each path of CAPTURE that an output option named to "
        "the text written there.");
}
