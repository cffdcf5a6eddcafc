// _trainsim: the C++ half of the Python module `trainsim` (python/trainsim/).
// Scenarios are loaded and checked here by the scenario library itself (the
// same rules and messages as the CLI, no SimGrid); simulations run in a
// child process that executes the trainsim binary (SimGrid allows one engine
// per process), with the GIL released while it runs.
#include <fcntl.h>
#include <fmt/format.h>
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
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/document.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/model_spec.hpp"

namespace py = pybind11;

namespace {

// Python values as YAML: maps, lists and scalars (True and False as
// true / false, None as null).
YAML::Node to_yaml(const py::handle& value) {
  if (value.is_none())
    return YAML::Node(YAML::NodeType::Null);
  if (py::isinstance<py::bool_>(value))
    return YAML::Node(value.cast<bool>() ? "true" : "false");
  if (py::isinstance<py::int_>(value))
    return YAML::Node(py::str(value).cast<std::string>());
  if (py::isinstance<py::float_>(value))
    return YAML::Node(py::repr(value).cast<std::string>());
  if (py::isinstance<py::str>(value))
    return YAML::Node(value.cast<std::string>());
  if (py::isinstance<py::dict>(value)) {
    YAML::Node map(YAML::NodeType::Map);
    for (const auto& [k, v] : value.cast<py::dict>())
      map[py::str(k).cast<std::string>()] = to_yaml(v);
    return map;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& item : value)
      list.push_back(to_yaml(item));
    return list;
  }
  throw py::type_error(
      fmt::format("cannot write {} in a scenario (expected dicts, lists, str, int, float, "
                  "bool or None)",
                  py::repr(value.get_type()).cast<std::string>()));
}

std::string emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

YAML::Node parse(const std::string& text, const std::string& file) {
  // The CLI's YAML reader (a second document or a tag refused).
  YAML::Node root = trainsim::platforms::load_yaml_document(text, file);
  return root && !root.IsNull() ? root : YAML::Node(YAML::NodeType::Map);
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

// Loads and checks a scenario; returns what Python shows of it.
py::dict check_scenario(const std::string& text, const std::string& file,
                        const std::vector<std::string>& overrides, bool check_memory) {
  trainsim::platforms::InputSource source(file);
  const YAML::Node root = resolved(text, file, overrides, source);
  const auto s = trainsim::scenario::load_scenario_document(root, source, {.check_memory = check_memory});
  py::dict d;
  d["name"] = s.name;
  d["gpus"] = s.cluster.gpu_count();
  d["nodes"] = s.cluster.node_count();
  d["gpu"] = s.cluster.groups.front().gpu.name;
  d["model"] = s.model.name;
  d["parameters"] = s.workload ? 0.0 : s.model.parameter_count();
  d["plan"] = py::dict(py::arg("dp") = s.plan.dp, py::arg("tp") = s.plan.tp, py::arg("pp") = s.plan.pp,
                       py::arg("cp") = s.plan.cp, py::arg("micro_batch_size") = s.plan.micro_batch_size,
                       py::arg("global_batch_size") = s.plan.global_batch_size,
                       py::arg("micro_batches") = s.plan.micro_batches());
  d["workload"] = s.workload ? py::object(py::str(s.workload->chakra)) : py::object(py::none());
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

// Runs `argv` to the end with the GIL released; returns (exit status,
// stdout, stderr). A child killed by signal N gives 128 + N.
py::tuple run_program(const std::vector<std::string>& argv, const std::string& cwd) {
  if (argv.empty())
    throw py::value_error("run_program: no program");
  int status = 0;
  std::string out, err;
  {
    py::gil_scoped_release release;
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
      throw std::runtime_error("cannot create a pipe");
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0)
      throw std::runtime_error("cannot fork");
    if (pid == 0) {
      // Only async-signal-safe calls until exec: the parent may have threads.
      ::dup2(out_pipe[1], STDOUT_FILENO);
      ::dup2(err_pipe[1], STDERR_FILENO);
      if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
        ::_exit(126);
      ::execv(args[0], args.data());
      const char* why = ::strerror(errno);
      (void)!::write(STDERR_FILENO, why, std::strlen(why));
      ::_exit(127);
    }
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    // Both pipes drained together, so a chatty child never blocks on one.
    int fds[2] = {out_pipe[0], err_pipe[0]};
    std::string* sinks[2] = {&out, &err};
    bool open[2] = {true, true};
    char buffer[8192];
    while (open[0] || open[1]) {
      fd_set set;
      FD_ZERO(&set);
      int top = -1;
      for (int i = 0; i < 2; ++i)
        if (open[i]) {
          FD_SET(fds[i], &set);
          top = std::max(top, fds[i]);
        }
      if (::select(top + 1, &set, nullptr, nullptr, nullptr) < 0) {
        if (errno == EINTR)
          continue;
        break;
      }
      for (int i = 0; i < 2; ++i)
        if (open[i] && FD_ISSET(fds[i], &set)) {
          const ssize_t n = ::read(fds[i], buffer, sizeof buffer);
          if (n > 0)
            sinks[i]->append(buffer, static_cast<std::size_t>(n));
          else if (n == 0 || errno != EINTR)
            open[i] = false;
        }
    }
    ::close(fds[0]);
    ::close(fds[1]);
    int raw = 0;
    while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
    }
    status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  }
  return py::make_tuple(status, py::bytes(out), py::bytes(err));
}

}  // namespace

PYBIND11_MODULE(_trainsim, m) {
  m.doc() = "trainsim's C++ side: scenario checks, presets, child processes (use the `trainsim` package)";
  // Raised with the loader's problems; python/trainsim/__init__.py turns it
  // into trainsim.InputError.
  static py::exception<trainsim::platforms::InputError> input_error(m, "_InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const trainsim::platforms::InputError& e) {
      py::list problems;
      for (const auto& problem : e.problems())
        problems.append(problem);
      PyErr_SetObject(input_error.ptr(), problems.ptr());
    }
  });
  m.def("check_scenario", &check_scenario, py::arg("text"), py::arg("file"), py::arg("overrides"),
        py::arg("check_memory") = true, "Load and check a scenario; its name, size, model and plan");
  m.def(
      "resolved_yaml",
      [](const std::string& text, const std::string& file, const std::vector<std::string>& overrides) {
        trainsim::platforms::InputSource source(file);
        return emit(resolved(text, file, overrides, source));
      },
      py::arg("text"), py::arg("file"), py::arg("overrides"),
      "The document with the overrides applied, as YAML");
  m.def(
      "to_yaml", [](const py::handle& value) { return emit(to_yaml(value)); }, py::arg("value"),
      "Python values (dicts, lists, scalars) as YAML text");
  m.def(
      "read_input_file",
      [](const std::string& path) {
        return trainsim::platforms::read_input_file(path, "scenario file",
                                                    trainsim::platforms::kMaxYamlInputBytes);
      },
      py::arg("path"),
      "A scenario file's text, read with the CLI's checks (a regular file, its size, UTF-8)");
  m.def("presets", &presets, "The catalogue GPUs, cluster presets and model presets");
  m.def("run_program", &run_program, py::arg("argv"), py::arg("cwd") = "",
        "Run a program to its end with the GIL released: (status, stdout, stderr)");
}
