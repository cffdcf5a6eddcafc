// The `workload` section: a Chakra execution trace (one file per GPU rank)
// replayed on the scenario's cluster instead of a model and a plan.
//
//   workload:
//     chakra: traces/allreduce     # a folder of <name>.<rank>.et files, the prefix
//                                  # <dir>/<name> of such files, or one .et file
//     comm_groups: groups.json     # optional: ASTRA-sim's communicator groups (pg_name -> ranks)
//     global_batch_size: 512       # optional: sequences the traced iteration trains ...
//     seq_len: 4096                # ... and their length, for tokens/s (default: none)
//
// Relative paths are relative to the scenario file's folder.
#include <fmt/format.h>

#include <filesystem>

#include "sim/scenario/sections.hpp"
#include "workloads/chakra/et_file.hpp"

namespace trainsim::scenario {
namespace fs = std::filesystem;
namespace {

fs::path resolve(const std::string& path, const std::string& scenario_file) {
  const fs::path p(path);
  if (p.is_absolute())
    return p;
  return fs::absolute(fs::path(scenario_file).parent_path() / p).lexically_normal();
}

}  // namespace

bool read_workload_section(platforms::MapReader& w, Scenario& scenario) {
  const std::size_t before = w.error_count();
  TraceWorkload workload;
  const auto chakra = w.text("chakra");
  if (!chakra && !w.has("chakra"))
    w.error("chakra",
            "missing (expected the Chakra trace to replay: a folder of <name>.<rank>.et files, the "
            "prefix <dir>/<name> of such files, or one .et file)");
  if (chakra) {
    const fs::path where = resolve(*chakra, scenario.file);
    try {
      workload.ranks = static_cast<int>(chakra::find_trace_files(where).size());
      workload.chakra = where.string();
    } catch (const platforms::InputError& e) {
      for (const auto& problem : e.problems())
        w.error("chakra", problem);
    }
  }
  if (const auto groups = w.text("comm_groups")) {
    const fs::path path = resolve(*groups, scenario.file);
    std::error_code ec;
    if (fs::is_regular_file(path, ec))
      workload.comm_groups = path.string();
    else
      w.error("comm_groups",
              fmt::format("'{}' is not a file (looked for {}); expected ASTRA-sim's communicator "
                          "groups file, JSON {{\"<id>\": [ranks...]}}",
                          *groups, path.string()));
  }
  auto& plan = scenario.plan;
  auto& model = scenario.model;
  const int gpus = scenario.cluster.gpu_count();
  plan.global_batch_size = static_cast<int>(w.integer("global_batch_size", 1, kMaxCount).value_or(0));
  model.seq_len = static_cast<int>(w.integer("seq_len", 1, kMaxCount).value_or(0));
  if ((plan.global_batch_size > 0) != (model.seq_len > 0))
    w.error(plan.global_batch_size > 0 ? "seq_len" : "global_batch_size",
            "missing: global_batch_size and seq_len go together (the tokens one traced iteration trains)");
  w.finish();
  if (w.error_count() != before)
    return false;
  if (workload.ranks > gpus) {
    w.error("chakra",
            fmt::format("the trace has {} ranks but the cluster {} GPUs; expected a cluster with at "
                        "least one GPU per rank (cluster.nodes, cluster.gpus_per_node)",
                        workload.ranks, gpus));
    return false;
  }
  // What the reports say about the workload: its name, and data
  // parallelism over every GPU in one pipeline stage.
  fs::path named = workload.chakra;
  if (named.filename().empty())
    named = named.parent_path();
  model.name = "chakra:" + named.filename().string();
  plan.dp = gpus;
  plan.tp = plan.pp = plan.cp = plan.ep = 1;
  plan.micro_batch_size = 1;
  plan.virtual_stages = 1;
  scenario.workload = std::move(workload);
  return true;
}

}  // namespace trainsim::scenario
