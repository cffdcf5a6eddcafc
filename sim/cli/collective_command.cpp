#include "sim/cli/collective_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <new>

#include "platforms/input_error.hpp"
#include "platforms/presets.hpp"
#include "platforms/units.hpp"
#include "sim/cli/finite_option.hpp"
#include "sim/cli/replay_progress.hpp"
#include "sim/replay/collective_benchmark.hpp"
#include "sim/scenario/cluster_loader.hpp"
#include "sim/scenario/run_size.hpp"

namespace trainsim::cli {
namespace {

using workloads::CollectiveOp;

// A choice table's words as CLI11's IsMember takes them.
template <class E>
std::vector<std::string> word_strings(const platforms::ChoiceWords<E>& table) {
  const auto words = platforms::words_of(table);
  return std::vector<std::string>(words.begin(), words.end());
}

const std::vector<std::pair<std::string, CollectiveOp>> kOps{
    {"all_reduce", CollectiveOp::all_reduce}, {"reduce_scatter", CollectiveOp::reduce_scatter},
    {"all_gather", CollectiveOp::all_gather}, {"broadcast", CollectiveOp::broadcast},
    {"all_to_all", CollectiveOp::all_to_all}, {"send_recv", CollectiveOp::send_recv},
    {"sendrecv", CollectiveOp::send_recv},    {"p2p", CollectiveOp::send_recv},
};

// As nccl-tests takes them: "8" (bytes), "128M" (MiB), or with a unit ("1MiB").
double parse_size(const std::string& option, const std::string& text) {
  try {
    const double bytes = units::parse_message_size_bytes(text);
    if (bytes < 1)
      throw platforms::InputError(
          {fmt::format("{} {}: expected at least one byte, for example 1MiB", option, text)});
    return bytes;
  } catch (const units::UnitError& e) {
    throw platforms::InputError({fmt::format("{} {}: {}", option, text, e.what())});
  }
}

std::string describe(const platforms::ClusterSpec& cluster, int ranks) {
  std::string groups;
  for (const auto& g : cluster.groups)
    groups += fmt::format(
        "{}{} node{} x {} {} ({}{})", groups.empty() ? "" : " + ", g.nodes, g.nodes == 1 ? "" : "s",
        g.gpus_per_node, g.gpu.name, to_string(g.shape),
        g.nodes_per_domain() > 1 ? fmt::format(", NVLink domains of {} GPUs", g.gpus_per_domain()) : "");
  return fmt::format("{} ranks on {}: {}; fabric {} {}", ranks, cluster.name, groups,
                     to_string(cluster.fabric.topology), to_string(cluster.fabric.technology));
}

}  // namespace

CLI::App* add_collective_command(CLI::App& app, CollectiveOptions& options) {
  auto* cmd = app.add_subcommand(
      "collective", "Simulate one collective at a range of sizes and print an nccl-tests-like table");
  std::vector<std::string> op_names;
  for (const auto& [name, op] : kOps)
    op_names.push_back(name);
  cmd->add_option(
         "--cluster", options.cluster,
         "Cluster preset (" + platforms::cluster_preset_names() + ") or a YAML file with a `cluster` section")
      ->capture_default_str();
  cmd->add_option("--op", options.op, "Collective")->check(CLI::IsMember(op_names))->capture_default_str();
  cmd->add_option("-g,--ranks", options.ranks,
                  "GPU ranks 0..N-1 take part (default: one NVLink domain, a node unless the cluster's "
                  "nvlink_domain joins several); a homogeneous cluster grows to hold them "
                  "(-g as nccl-tests' GPU count)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("-b,--min,--minbytes", options.min_size,
                  "Smallest message size: bytes (8), K/M/G as nccl-tests (128M = 128 MiB), or with a unit "
                  "(1MiB, 1.5GB)")
      ->capture_default_str();
  cmd->add_option("-e,--max,--maxbytes", options.max_size, "Largest message size, as --min")
      ->capture_default_str();
  cmd->add_option("-f,--step-factor", options.step_factor, "Multiply the size by this between rows")
      ->check(finite_number() & CLI::Range(1.0001, 1e9))
      ->capture_default_str();
  cmd->add_option("--algorithm", options.algorithm,
                  "auto (NCCL-style tuning), ring, tree, hierarchical, nvls or nvls_tree")
      ->check(CLI::IsMember(word_strings(platforms::collective_algorithm_words())))
      ->capture_default_str();
  cmd->add_option("--fidelity", options.fidelity,
                  "auto (every algorithm step, without SimGrid flows while nothing else shares the "
                  "links), detailed (every algorithm step as flows) or fast (one flow per edge); default: "
                  "the cluster's")
      ->check(CLI::IsMember(word_strings(platforms::fidelity_words())));
  cmd->add_option("-s,--set", options.overrides,
                  "Override a cluster value, KEY=VALUE with a dotted key (repeatable), e.g. --set "
                  "cluster.nic.bandwidth=400Gbps");
  cmd->add_option("--format", options.format, "table or csv")
      ->check(CLI::IsMember({"table", "csv"}))
      ->capture_default_str();
  cmd->add_flag("--progress", options.progress,
                "Show the progress line on stderr even when it is not a terminal (one line every 10 s)");
  return cmd;
}

int collective_command(const CollectiveOptions& options) {
  auto cluster = scenario::load_cluster(options.cluster, options.overrides);
  sim::CollectiveBenchmarkOptions bench;
  for (const auto& [name, op] : kOps)
    if (name == options.op)
      bench.op = op;
  bench.algorithm = *platforms::collective_algorithm_from_string(options.algorithm);
  for (const auto& [word, fidelity] : platforms::fidelity_words())
    if (options.fidelity == word)
      cluster.collectives.fidelity = fidelity;

  const double min_bytes = parse_size("--min", options.min_size);
  const double max_bytes = parse_size("--max", options.max_size);
  if (max_bytes < min_bytes)
    throw platforms::InputError(
        {fmt::format("--max {} is smaller than --min {}", options.max_size, options.min_size)});
  bench.sizes_bytes = sim::size_range(min_bytes, max_bytes, options.step_factor);

  bench.ranks = options.ranks > 0 ? options.ranks : cluster.groups.front().gpus_per_domain();
  std::string grown;
  if (bench.ranks > cluster.gpu_count()) {
    if (cluster.groups.size() != 1)
      throw platforms::InputError({fmt::format("--ranks {}: the mixed cluster {} has only {} GPUs",
                                               bench.ranks, cluster.name, cluster.gpu_count())});
    auto& group = cluster.groups.front();
    const int nodes = (bench.ranks + group.gpus_per_node - 1) / group.gpus_per_node;
    grown = fmt::format("# the cluster was grown from {} to {} nodes to hold {} ranks\n", group.nodes, nodes,
                        bench.ranks);
    group.nodes = nodes;
  }
  if (bench.ranks < 2)
    throw platforms::InputError(
        {fmt::format("--ranks {}: a collective needs at least two ranks", bench.ranks)});

  // The size guard: refuse what cannot fit here, say up front what will take long.
  const auto size =
      scenario::estimate_collective_size(bench.ranks, bench.sizes_bytes.size(), cluster.collectives.fidelity);
  scenario::check_collective_size(bench.ranks, size, scenario::process_memory_limit());
  if (size.replay_s > scenario::kLongRun_s)
    std::cerr << fmt::format("note: --ranks {}: a long run: {} (estimate)\n", bench.ranks,
                             scenario::describe(size));

  sim::ProgressLine line(std::cerr, sim::progress_wanted(options.progress), sim::stderr_is_terminal());
  bench.observer = observe_replay(line, "--fidelity fast");
  line.start_ticker();
  const auto benchmark = [&] {
    try {
      return sim::run_collective_benchmark(cluster, bench);
    } catch (const std::bad_alloc&) {
      throw platforms::InputError({scenario::out_of_memory_message("the collectives", &size)});
    }
  }();
  line.close();
  const auto& rows = benchmark.rows;
  // What ran, when it is not what was asked for, and why.
  std::string substituted;
  if (!benchmark.algorithm_unavailable.empty()) {
    std::vector<std::string> ran;
    for (const auto& r : rows)
      if (std::find(ran.begin(), ran.end(), to_string(r.algorithm)) == ran.end())
        ran.emplace_back(to_string(r.algorithm));
    std::string names;
    for (const auto& n : ran)
      names += (names.empty() ? "" : ", ") + n;
    substituted =
        fmt::format("# {} was asked for but cannot run here: {}; ran {} instead (as `auto` chooses)\n",
                    options.algorithm, benchmark.algorithm_unavailable, names);
    std::cerr << "note: " << substituted.substr(2);
  }

  // With NCCL's protocol costs on, a last column says which protocol each
  // size's ring paid (`auto`'s pick; wire where the algorithm keeps its wire
  // latencies); without them the table stays nccl-tests' columns.
  const bool protocols = cluster.collectives.ring_protocol != platforms::RingProtocol::wire;
  if (options.format == "csv") {
    std::cout << "size_bytes,count,algorithm,channels,time_us,algbw_GBps,busbw_GBps"
              << (protocols ? ",protocol\n" : "\n");
    for (const auto& r : rows)
      fmt::print("{},{},{},{},{},{},{}{}\n", units::format_machine(r.bytes),
                 units::format_machine(r.bytes / 4), to_string(r.algorithm), r.channels,
                 units::format_machine(r.time_s * 1e6), units::format_machine(r.algbw_Bps / 1e9),
                 units::format_machine(r.busbw_Bps / 1e9),
                 protocols ? "," + std::string(to_string(r.protocol)) : "");
    return 0;
  }
  fmt::print("# trainsim collective: {} over {}\n", options.op, describe(cluster, bench.ranks));
  fmt::print(
      "# algorithm {}, fidelity {}; all sizes simulated back to back in one SimGrid run\n",
      substituted.empty() ? options.algorithm : fmt::format("{} asked (not available)", options.algorithm),
      to_string(cluster.collectives.fidelity));
  if (protocols)
    fmt::print("# rings across nodes pay NCCL's protocol step costs (protocol {})\n",
               to_string(cluster.collectives.ring_protocol));
  std::cout << substituted << grown;
  fmt::print("#\n# {:>14} {:>12} {:>12} {:>8} {:>12} {:>12} {:>12}{}\n", "size(B)", "count", "algorithm",
             "channels", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
             protocols ? fmt::format(" {:>9}", "protocol") : "");
  double busbw_sum = 0;
  for (const auto& r : rows) {
    fmt::print("  {:>14.0f} {:>12.0f} {:>12} {:>8} {:>12.2f} {:>12.2f} {:>12.2f}{}\n", r.bytes, r.bytes / 4,
               to_string(r.algorithm), r.channels, r.time_s * 1e6, r.algbw_Bps / 1e9, r.busbw_Bps / 1e9,
               protocols ? fmt::format(" {:>9}", to_string(r.protocol)) : "");
    busbw_sum += r.busbw_Bps;
  }
  fmt::print("# Avg bus bandwidth    : {:.2f} GB/s\n", busbw_sum / static_cast<double>(rows.size()) / 1e9);
  return 0;
}

}  // namespace trainsim::cli
