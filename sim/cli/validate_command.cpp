#include "sim/cli/validate_command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <sstream>
#include <thread>

#include "analysis/mfu_definitions.hpp"
#include "analysis/reporters/atomic_file.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/interruption.hpp"
#include "platforms/number_format.hpp"
#include "platforms/presets.hpp"
#include "platforms/yaml_document.hpp"
#include "sim/cli/embedded_templates.hpp"
#include "sim/cli/finite_option.hpp"
#include "sim/cli/validation_dataset.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/run_size.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/study/progress.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

namespace {

// What --metric may compare: the iteration time, or one of summary.json's
// MFUs (trainsim's own and those of analysis/mfu_definitions.hpp).
std::vector<std::string> metric_names() {
  std::vector<std::string> names{"iteration_time", "mfu"};
  for (const auto& d : analysis::mfu_definitions())
    names.emplace_back(d.key);
  return names;
}

}  // namespace

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& options) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Replay every row of a measured dataset (vTrain CSV format) and report the prediction error");
  cmd->add_option("dataset", options.dataset, "CSV of measured iteration times (vTrain's columns)")
      ->required();
  cmd->add_option(
      "-t,--template", options.template_file,
      "scenario::Scenario each row fills in (default: the built-in scenarios/validation/vtrain-a100.yaml)");
  cmd->add_option("-j,--jobs", options.jobs, "Simulations run at once (default: one per hardware thread)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--subset", options.subset,
                  "Rows to replay: all, fit or check (the dataset's `set` column)")
      ->check(CLI::IsMember({"all", "fit", "check"}));
  cmd->add_option("--csv", options.csv_out, "Also write the per-row results to this CSV file");
  cmd->add_option("-s,--set", options.overrides,
                  "Override a template value, KEY=VALUE with a dotted key (repeatable), e.g. --set "
                  "plan.tp_comm_overlap=true; the keys a row sets (nodes, model shape, tp, dp, pp, batch) "
                  "keep the row's values");
  // A measured row ran on its cluster: when the memory model disagrees, the
  // time can still be checked (the disagreement is the memory model's error).
  cmd->add_flag("--allow-oom", options.allow_oom,
                "Replay rows even when the memory model says their plan does not fit in GPU memory");
  cmd->add_option("--max-mape", options.max_mape_percent,
                  "Exit with status 3 when the MAPE of the replayed rows exceeds this many percent")
      ->check(finite_number() & CLI::Range(0.0, 1000.0));
  cmd->add_option("--metric", options.metric,
                  "What to compare: iteration_time (the default), or the MFU under a definition: mfu "
                  "(trainsim's), mfu_6n, mfu_palm, mfu_nvidia (docs/outputs.md, \"MFU definitions\"), "
                  "against the dataset's `MFU (%)` column")
      ->check(CLI::IsMember(metric_names()));
  // As `run`'s: a row of thousands of GPUs (Megatron-LM's weak-scaling rows)
  // otherwise needs the full replay's memory to be checked at all.
  auto* fold = cmd->add_flag("--fold", options.fold,
                             "Replay each row folded where a rotation of its replicas is a symmetry (as "
                             "`run --fold`; the default from 4,096 GPUs on)");
  cmd->add_flag("--no-fold", options.no_fold, "Replay every row whole (the default below 4,096 GPUs)")
      ->excludes(fold);
  cmd->add_flag("--progress", options.progress,
                "Show the progress line on stderr even when it is not a terminal (one line every 10 s)");
  return cmd;
}

namespace {

// The `--set` overrides that turn the template into one row's scenario.
std::vector<std::string> row_overrides(const ValidationRow& row, int template_gpus_per_node) {
  const int per_node = std::min(row.gpus, template_gpus_per_node);
  const int nodes = (row.gpus + per_node - 1) / per_node;
  std::vector<std::string> overrides{fmt::format("cluster.nodes={}", nodes),
                                     fmt::format("cluster.gpus_per_node={}", per_node),
                                     fmt::format("model.layers={}", row.layers),
                                     fmt::format("model.hidden={}", row.hidden),
                                     fmt::format("model.heads={}", row.heads),
                                     fmt::format("model.seq_len={}", row.seq_len),
                                     fmt::format("plan.tp={}", row.tp),
                                     fmt::format("plan.dp={}", row.dp),
                                     fmt::format("plan.pp={}", row.pp),
                                     fmt::format("plan.micro_batch_size={}", row.micro_batch),
                                     fmt::format("plan.global_batch_size={}", row.global_batch)};
  if (row.cp > 0)
    overrides.push_back(fmt::format("plan.context_parallel={}", row.cp));
  if (row.virtual_stages > 0) {
    overrides.push_back(row.virtual_stages > 1 ? "plan.schedule=interleaved_1f1b" : "plan.schedule=1f1b");
    overrides.push_back(fmt::format("plan.virtual_stages={}", row.virtual_stages));
  }
  // Megatron-LM turns sequence parallelism off without tensor parallelism
  // (arguments.py: "Disabling sequence parallelism because tensor model
  // parallelism is disabled"), and with it the TP overlap, which needs it:
  // a template's sequence_parallel / tp_comm_overlap do not apply to a row
  // of tp 1.
  if (row.tp == 1)
    overrides.insert(overrides.end(), {"plan.sequence_parallel=false", "plan.tp_comm_overlap=false"});
  return overrides;
}

struct RowResult {
  const ValidationRow* row = nullptr;
  double predicted_ms = 0;
  // The summary's MFUs, as fractions: mfu, then mfu_definitions()' order.
  std::vector<double> predicted_mfu;
  bool ok = false;
  std::string error;        // what the child said when it failed
  int folded_replayed = 0;  // replicas replayed when the row folded (0: replayed whole)
  int replicas = 0;         // the row's data-parallel replicas
};

// A row's simulation in a child process: its pid, and the pipe on which it
// writes its iteration time (or its error).
struct RowChild {
  std::size_t row = 0;
  int fd = -1;
};

// The most a child writes: less than a pipe holds, so that it exits without
// waiting for the parent to read (the parent reads once it has exited).
constexpr std::size_t kMaxChildText = 60000;

// Forks a child that simulates the row's scenario and writes its iteration
// time (or its error) into a pipe. The parent never starts SimGrid, so
// every child gets a fresh engine; the child skips the timeline and trace
// files that `trainsim run` writes. No file: a signal stops the children
// with the parent and leaves nothing behind (platforms/interruption.hpp).
pid_t spawn_row(const scenario::Scenario& scenario, sim::FoldMode fold, int& read_fd) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(fmt::format("pipe failed: {}", std::strerror(errno)));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = platforms::fork_stoppable_child();
  if (pid < 0)
    throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid > 0) {
    ::close(fds[1]);
    read_fd = fds[0];
    return pid;
  }
  ::close(fds[0]);
  int status = 0;
  std::string text;
  try {
    const auto result =
        sim::simulate(scenario, {.fold = fold, .iterations = 1, .more_failure_seeds = {}, .observer = {}});
    const auto& s = result.summary;
    // The replicas replayed (one per class) when the row folded, else 0.
    text = fmt::format("{:.17g} {:.17g} {:.17g} {:.17g} {:.17g} {} {}\n", s.iteration_time_s, s.mfu, s.mfu_6n,
                       s.mfu_palm, s.mfu_nvidia, s.fold.folded ? s.fold.simulated : 0, s.fold.replicas);
  } catch (const std::bad_alloc&) {
    text = fmt::format("error: {}\n", scenario::out_of_memory_message("the row's run", nullptr));
    status = 1;
  } catch (const std::exception& e) {
    text = fmt::format("error: {}\n", e.what());
    status = 2;
  }
  if (text.size() > kMaxChildText)
    text.resize(kMaxChildText);
  for (std::size_t done = 0; done < text.size();) {
    const auto n = ::write(fds[1], text.data() + done, text.size() - done);
    if (n <= 0) {
      status = 2;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fds[1]);
  std::_Exit(status);
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR);)
    if (n > 0)
      text.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}

void collect(RowResult& result, int status, std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::istringstream in(text);
    double time_s = 0;
    result.predicted_mfu.assign(1 + analysis::mfu_definitions().size(), 0.0);
    in >> time_s;
    for (double& mfu : result.predicted_mfu)
      in >> mfu;
    in >> result.folded_replayed >> result.replicas;
    if (in && in.peek() == std::char_traits<char>::eof()) {
      result.predicted_ms = time_s * 1e3;
      result.ok = true;
    } else {
      result.error = fmt::format("unreadable result '{}'", text);
    }
    return;
  }
  result.error = WIFEXITED(status) ? text : fmt::format("killed by signal {}", WTERMSIG(status));
}

// The compared figure of a row, measured and predicted: milliseconds, or an
// MFU in percent.
struct Compared {
  double measured = 0;
  double predicted = 0;
};

Compared compared(const RowResult& r, const std::string& metric) {
  if (metric == "iteration_time")
    return {r.row->measured_ms, r.predicted_ms};
  const auto names = metric_names();
  const auto at = static_cast<std::size_t>(std::find(names.begin(), names.end(), metric) - names.begin()) - 1;
  return {r.row->measured_mfu_percent, 100.0 * r.predicted_mfu.at(at)};
}

double mape_percent(const std::vector<RowResult>& results, const std::string& set,
                    const std::string& metric) {
  double sum = 0;
  int n = 0;
  for (const auto& r : results) {
    if (!r.ok || (!set.empty() && r.row->set != set))
      continue;
    const auto c = compared(r, metric);
    sum += std::abs(c.predicted - c.measured) / c.measured;
    ++n;
  }
  return n == 0 ? std::nan("") : 100.0 * sum / n;
}

int count(const std::vector<RowResult>& results, const std::string& set) {
  return static_cast<int>(std::count_if(results.begin(), results.end(), [&](const RowResult& r) {
    return r.ok && (set.empty() || r.row->set == set);
  }));
}

}  // namespace

int validate_command(const ValidateOptions& options) {
  const auto rows = read_validation_dataset(options.dataset);

  // The template: a file, or the built-in one.
  std::string template_text;
  std::string template_label = options.template_file;
  if (options.template_file.empty()) {
    template_text = std::string(vtrain_a100_template());
    template_label = "scenarios/validation/vtrain-a100.yaml (built in)";
  } else {
    template_text =
        platforms::read_input_file(options.template_file, "scenario template", platforms::kMaxYamlInputBytes);
  }

  // Check every row's scenario here, before any simulation: a bad row is bad
  // input, reported with its line.
  std::vector<const ValidationRow*> selected;
  for (const auto& row : rows)
    if (options.subset == "all" || row.set == options.subset)
      selected.push_back(&row);
  if (selected.empty())
    throw platforms::InputError(
        {fmt::format("{}: no rows in subset '{}' (the `set` column marks rows fit or check)", options.dataset,
                     options.subset)});
  // Rows smaller than a node get a node of their size (the template's node
  // shape otherwise); the loader checks the value like any other.
  const int gpus_per_node = [&] {
    // The loader reports what is wrong with the template (a node of 0 GPUs
    // too, which here would divide by zero).
    try {
      const YAML::Node root = platforms::load_yaml_document(template_text, template_label);
      const YAML::Node cluster = root.IsMap() && root["cluster"].IsMap() ? root["cluster"] : YAML::Node();
      auto per_node_of = [](const YAML::Node& c) {
        return c.IsMap() && c["gpus_per_node"] && c["gpus_per_node"].IsScalar() ? c["gpus_per_node"].as<int>()
                                                                                : 0;
      };
      int n = per_node_of(cluster);
      // A preset's node shape is the template's when it does not say its own
      // (GB200 NVL72: trays of 4; 8 would put two trays' GPUs on one node).
      if (n == 0 && cluster.IsMap() && cluster["preset"] && cluster["preset"].IsScalar())
        if (const auto* preset = platforms::find_cluster_preset(cluster["preset"].Scalar())) {
          const YAML::Node preset_root =
              platforms::load_yaml_document(std::string(preset->text), std::string(preset->file));
          if (preset_root.IsMap())
            n = per_node_of(preset_root["cluster"]);
        }
      return n > 0 ? n : 8;
    } catch (const YAML::Exception&) {
      return 8;
    } catch (const platforms::InputError&) {
      return 8;
    }
  }();
  // Each row's scenario through the size guard of `run` too: a row of a
  // billion sequences is refused with its estimate, not simulated.
  platforms::ErrorList problems;
  const sim::FoldMode fold = sim::fold_mode(options.fold, options.no_fold);
  std::vector<scenario::Scenario> scenarios;
  for (const auto* row : selected) {
    try {
      std::vector<std::string> overrides = options.overrides;
      for (auto& o : row_overrides(*row, gpus_per_node))
        overrides.push_back(std::move(o));
      scenarios.push_back(scenario::parse_scenario_text(
          template_text, template_label, overrides,
          scenario::with_size_guard(
              {.check_memory = !options.allow_oom, .fold_from_gpus = sim::fold_from_gpus(fold)})));
    } catch (const platforms::InputError& e) {
      for (const auto& p : e.problems())
        problems.add(fmt::format("{}:{}: this row gives a bad scenario: {}", options.dataset, row->line, p));
    }
  }
  // An MFU is compared with the dataset's measured one: every row needs it.
  if (options.metric != "iteration_time")
    for (const auto* row : selected)
      if (row->measured_mfu_percent <= 0)
        problems.add(
            fmt::format("{}:{}: --metric {} compares the measured MFU, but the row has none "
                        "(expected an 'MFU (%)' column with a value for every row)",
                        options.dataset, row->line, options.metric));
  problems.throw_if_any();

  // Replay: up to `jobs` children at once.
  const int jobs = options.jobs > 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::vector<RowResult> results(selected.size());
  for (std::size_t i = 0; i < selected.size(); ++i)
    results[i].row = selected[i];
  // Longest rows first, so that the last child to finish is a short one:
  // the replay's cost grows with GPUs x micro-batches x TP ring size.
  std::vector<std::size_t> order(selected.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  auto cost = [&](std::size_t i) {
    const auto& r = *selected[i];
    return double(r.gpus) * r.global_batch / (double(r.micro_batch) * r.dp) * std::max(1, r.tp);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cost(a) > cost(b); });
  std::map<pid_t, RowChild> running;
  std::size_t next = 0, done = 0;
  // Updated as rows finish (no ticker: this process forks).
  sim::ProgressLine line(std::cerr, sim::progress_wanted(options.progress), sim::stderr_is_terminal());
  auto show = [&] {
    std::string text =
        fmt::format("validating: {}/{} rows done, {} running", done, selected.size(), running.size());
    if (done > 0 && done < selected.size())
      text += fmt::format(", ~{} left", sim::format_time_left(line.elapsed_s() / static_cast<double>(done) *
                                                              static_cast<double>(selected.size() - done)));
    line.update(text);
  };
  while (next < order.size() || !running.empty()) {
    while (next < order.size() && static_cast<int>(running.size()) < jobs) {
      const std::size_t i = order[next++];
      RowChild child{.row = i, .fd = -1};
      const pid_t pid = spawn_row(scenarios[i], fold, child.fd);
      running[pid] = child;
    }
    int status = 0;
    const pid_t pid = platforms::wait_for_stoppable_child(-1, status);
    if (pid < 0)
      throw std::runtime_error(fmt::format("waitpid failed: {}", std::strerror(errno)));
    const auto it = running.find(pid);
    if (it == running.end())
      continue;
    collect(results[it->second.row], status, read_all(it->second.fd));
    running.erase(it);
    ++done;
    show();
  }
  line.close();

  // Report.
  std::string with;
  for (const auto& o : options.overrides)
    with += fmt::format(" --set {}", o);
  const bool time = options.metric == "iteration_time";
  if (!time)
    with += fmt::format(" --metric {}", options.metric);
  std::cout << fmt::format("trainsim validate {} (template {}{}, {} rows)\n\n", options.dataset,
                           template_label, with, selected.size());
  // The iteration time's columns keep their names; an MFU's say which one.
  const std::string measured_name = time ? "measured_ms" : "measured_" + options.metric;
  const std::string predicted_name = time ? "predicted_ms" : "predicted_" + options.metric;
  std::cout << fmt::format("{:>5} {:>5} {:>7} {:>5} {:>3} {:>3} {:>3} {:>3} {:>12} {:>13} {:>8}\n", "line",
                           "set", "params", "gpus", "tp", "dp", "pp", "mb", measured_name, predicted_name,
                           "error");
  // --csv: written whole at the end, atomically (never a cut table).
  std::ostringstream csv;
  csv << fmt::format("line,set,gpus,tp,dp,pp,micro_batch,{},{},error_percent\n",
                     time ? "measured_ms" : "measured_" + options.metric + "_percent",
                     time ? "predicted_ms" : "predicted_" + options.metric + "_percent");
  int failures = 0;
  for (const auto& r : results) {
    const auto& row = *r.row;
    const std::string params =
        row.parameters_billion > 0 ? fmt::format("{:g}B", row.parameters_billion) : "-";
    if (!r.ok) {
      ++failures;
      std::cout << fmt::format("{:>5} {:>5} {:>7} {:>5} {:>3} {:>3} {:>3} {:>3} {:>12.1f}  failed: {}\n",
                               row.line, row.set, params, row.gpus, row.tp, row.dp, row.pp, row.micro_batch,
                               time ? row.measured_ms : row.measured_mfu_percent, r.error);
      continue;
    }
    const auto c = compared(r, options.metric);
    const double error = 100.0 * (c.predicted - c.measured) / c.measured;
    std::cout << fmt::format(
        "{:>5} {:>5} {:>7} {:>5} {:>3} {:>3} {:>3} {:>3} {:>12.1f} {:>13.1f} {:>+7.1f}%\n", row.line, row.set,
        params, row.gpus, row.tp, row.dp, row.pp, row.micro_batch, c.measured, c.predicted, error);
    csv << fmt::format("{},{},{},{},{},{},{},{},{},{}\n", row.line, row.set, row.gpus, row.tp, row.dp, row.pp,
                       row.micro_batch, units::format_machine(c.measured), units::format_machine(c.predicted),
                       units::format_machine(error));
  }
  if (!options.csv_out.empty())
    analysis::write_file_atomically(options.csv_out, [&](std::ostream& out) { out << csv.str(); });
  // Which rows the fold replayed in part (docs/performance.md, "The fold"):
  // exact, but a reader comparing with a full replay should know.
  bool said_fold = false;
  for (const auto& r : results)
    if (r.ok && r.folded_replayed > 0) {
      std::cout << fmt::format(
          "{}line {}: folded, {} of {} data-parallel replicas replayed (one per class)\n",
          said_fold ? "" : "\n", r.row->line, r.folded_replayed, r.replicas);
      said_fold = true;
    }
  std::cout << '\n';
  for (const std::string set : {"fit", "check"})
    if (count(results, set) > 0)
      std::cout << fmt::format("MAPE {:<5} {:6.2f}% over {} rows\n", set,
                               mape_percent(results, set, options.metric), count(results, set));
  const double all = mape_percent(results, "", options.metric);
  std::cout << fmt::format("MAPE {:<5} {:6.2f}% over {} rows\n", "all", all, count(results, ""));
  if (failures > 0) {
    std::cerr << fmt::format("error: {} of {} rows failed to simulate\n", failures, results.size());
    return 2;
  }
  if (options.max_mape_percent > 0 && !(all <= options.max_mape_percent)) {
    std::cerr << fmt::format("error: MAPE {:.2f}% is above --max-mape {:g}%\n", all,
                             options.max_mape_percent);
    return 3;
  }
  return 0;
}

}  // namespace trainsim::cli
