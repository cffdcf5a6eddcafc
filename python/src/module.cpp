// _trainsim: the C++ half of the Python module `trainsim` (python/trainsim/).
// Scenarios are loaded and checked here by the scenario library itself (the
// same rules and messages as the CLI, no SimGrid); simulations run in a
// child process that executes the trainsim binary (SimGrid allows one engine
// per process), with the GIL released while it runs.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "platforms/gpu_spec.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/presets.hpp"
#include "platforms/yaml_reader.hpp"
#include "python/src/python_to_yaml.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/model_spec.hpp"

namespace py = pybind11;

namespace {

YAML::Node parse(const std::string& text, const std::string& file) {
  try {
    YAML::Node root = YAML::Load(text);
    return root && !root.IsNull() ? root : YAML::Node(YAML::NodeType::Map);
  } catch (const YAML::Exception& e) {
    throw trainsim::platforms::InputError(
        {fmt::format("{}:{}:{}: not valid YAML: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg)});
  }
}

// The document with the overrides applied, as `trainsim run --set` would.
YAML::Node resolved(const std::string& text, const std::string& file,
                    const std::vector<std::string>& overrides, trainsim::platforms::InputSource& source) {
  YAML::Node root = parse(text, file);
  trainsim::platforms::ErrorList errors;
  for (const auto& o : overrides)
    trainsim::platforms::apply_override(root, o, source, errors);
  errors.throw_if_any();
  return root;
}

// C++ text as a str: a path or a name read from a file may hold bytes that
// are not UTF-8 (os.fsencode gives them back), never an exception.
py::str to_python(const std::string& text) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "surrogateescape"));
}

// Loads and checks a scenario with the CLI's own loader (the text, then the
// --set overrides); returns what Python shows of it.
py::dict check_scenario(const std::string& text, const std::string& file,
                        const std::vector<std::string>& overrides, bool check_memory) {
  const auto s =
      trainsim::scenario::parse_scenario_text(text, file, overrides, {.check_memory = check_memory});
  py::dict d;
  d["name"] = to_python(s.name);
  d["gpus"] = s.cluster.gpu_count();
  d["nodes"] = s.cluster.node_count();
  d["gpu"] = to_python(s.cluster.groups.front().gpu.name);
  d["model"] = to_python(s.model.name);
  d["parameters"] = s.workload ? 0.0 : s.model.parameter_count();
  d["plan"] = py::dict(py::arg("dp") = s.plan.dp, py::arg("tp") = s.plan.tp, py::arg("pp") = s.plan.pp,
                       py::arg("cp") = s.plan.cp, py::arg("micro_batch_size") = s.plan.micro_batch_size,
                       py::arg("global_batch_size") = s.plan.global_batch_size,
                       py::arg("micro_batches") = s.plan.micro_batches());
  d["workload"] = s.workload ? py::object(to_python(s.workload->chakra)) : py::object(py::none());
  return d;
}

py::dict presets() {
  py::dict d;
  py::list gpus, aliases, clusters, models;
  for (const auto& gpu : trainsim::platforms::gpu_catalogue())
    gpus.append(gpu.name);
  for (const auto& preset : trainsim::platforms::cluster_presets())
    clusters.append(std::string(preset.name));
  for (auto name : trainsim::workloads::model_preset_names())
    models.append(std::string(name));
  d["gpus"] = gpus;
  d["clusters"] = clusters;
  d["models"] = models;
  return d;
}

// A file descriptor closed with its owner.
class Fd {
 public:
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { close(); }
  int get() const { return fd_; }
  int* put() { return &fd_; }
  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Runs `argv` to the end with the GIL released; returns (exit status,
// stdout, stderr). A child killed by signal N gives 128 + N. A program that
// cannot be started exits 127 with the reason on stderr; no pipe or no
// process (the machine's limits) raises OSError.
py::tuple run_program(const std::vector<std::string>& argv, const std::string& cwd) {
  if (argv.empty())
    throw py::value_error("run_program: no program");
  int status = 0;
  std::string out, err;
  const char* failed = nullptr;  // the call that failed, errno saved below
  int failed_errno = 0;
  {
    py::gil_scoped_release release;
    Fd pipes[2][2];
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    if (::pipe2(pipes[0][0].put(), O_CLOEXEC) != 0 || ::pipe2(pipes[1][0].put(), O_CLOEXEC) != 0)
      failed = "pipe";
    else if ((pid = ::fork()) < 0)
      failed = "fork";
    failed_errno = errno;
    if (pid == 0) {
      // Only async-signal-safe calls until exec: the parent may have threads.
      ::dup2(pipes[0][1].get(), STDOUT_FILENO);
      ::dup2(pipes[1][1].get(), STDERR_FILENO);
      if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
        ::_exit(126);
      ::execv(args[0], args.data());
      const char* why = ::strerror(errno);
      (void)!::write(STDERR_FILENO, why, std::strlen(why));
      ::_exit(127);
    }
    if (pid > 0) {
      pipes[0][1].close();
      pipes[1][1].close();
      // Both pipes drained together, so a chatty child never blocks on one
      // (poll, not select: a process with over 1,024 open files has
      // descriptors that select cannot hold).
      pollfd fds[2] = {{pipes[0][0].get(), POLLIN, 0}, {pipes[1][0].get(), POLLIN, 0}};
      std::string* sinks[2] = {&out, &err};
      char buffer[8192];
      while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        if (::poll(fds, 2, -1) < 0) {
          if (errno == EINTR)
            continue;
          break;
        }
        for (int i = 0; i < 2; ++i) {
          if (fds[i].fd < 0 || fds[i].revents == 0)
            continue;
          const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
          if (n > 0)
            sinks[i]->append(buffer, static_cast<std::size_t>(n));
          else if (n == 0 || errno != EINTR)
            fds[i].fd = -1;  // closed by its Fd
        }
      }
      int raw = 0;
      while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
      }
      status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    }
  }
  if (failed) {
    errno = failed_errno;
    PyErr_SetFromErrnoWithFilename(PyExc_OSError, failed);
    throw py::error_already_set();
  }
  return py::make_tuple(status, py::bytes(out), py::bytes(err));
}

// A problem as a str: a message may quote bytes that are not UTF-8 (a
// path), which are shown escaped rather than failing the translation.
py::object problem_text(const std::string& problem) {
  PyObject* text =
      PyUnicode_DecodeUTF8(problem.data(), static_cast<Py_ssize_t>(problem.size()), "backslashreplace");
  if (!text)
    throw py::error_already_set();  // MemoryError
  return py::reinterpret_steal<py::object>(text);
}

}  // namespace

PYBIND11_MODULE(_trainsim, m) {
  m.doc() = "trainsim's C++ side: scenario checks, presets, child processes (use the `trainsim` package)";
  // Raised with the loader's problems; python/trainsim/__init__.py turns it
  // into trainsim.InputError, and _InternalError (trainsim's own bug, the
  // CLI's exit status 2) into trainsim.SimulationError.
  static py::exception<trainsim::platforms::InputError> input_error(m, "_InputError", PyExc_ValueError);
  static py::exception<std::logic_error> internal_error(m, "_InternalError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const trainsim::platforms::InputError& e) {
      py::list problems;
      for (const auto& problem : e.problems())
        problems.append(problem_text(problem));
      PyErr_SetObject(input_error.ptr(), problems.ptr());
    } catch (const py::builtin_exception&) {
      throw;  // TypeError, ValueError, ...: pybind11's own translation
    } catch (const py::error_already_set&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;  // MemoryError
    } catch (const std::exception& e) {
      PyErr_SetObject(internal_error.ptr(), problem_text(e.what()).ptr());
    }
  });
  m.def("check_scenario", &check_scenario, py::arg("text"), py::arg("file"), py::arg("overrides"),
        py::arg("check_memory") = true, "Load and check a scenario; its name, size, model and plan");
  m.def(
      "read_scenario_file",
      [](const std::string& path) {
        return to_python(trainsim::platforms::read_input_file(path, "scenario file",
                                                              trainsim::platforms::kMaxYamlInputBytes));
      },
      py::arg("path"),
      "The text of a scenario file, read with the CLI's checks (a regular file, size, UTF-8)");
  m.def(
      "resolved_yaml",
      [](const std::string& text, const std::string& file, const std::vector<std::string>& overrides) {
        trainsim::platforms::InputSource source(file);
        // yaml-cpp's own emitter, which keeps the document's tags.
        YAML::Emitter out;
        out << resolved(text, file, overrides, source);
        return std::string(out.c_str()) + "\n";
      },
      py::arg("text"), py::arg("file"), py::arg("overrides"),
      "The document with the overrides applied, as YAML");
  m.def(
      "to_yaml",
      [](const py::handle& value, const std::string& where) {
        return trainsim::python::yaml_from_python(value, where);
      },
      py::arg("value"), py::arg("where"),
      "Python values (dicts, lists, scalars) as YAML text; `where` starts the messages");
  m.def("override_text", &trainsim::python::override_from_python, py::arg("key"), py::arg("value"),
        py::arg("where"), "KEY=VALUE as --set reads it (containers in YAML flow style)");
  m.def("presets", &presets, "The catalogue GPUs, cluster presets and model presets");
  m.def("run_program", &run_program, py::arg("argv"), py::arg("cwd") = "",
        "Run a program to its end with the GIL released: (status, stdout, stderr)");
}
