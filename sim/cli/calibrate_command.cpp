#include "sim/cli/calibrate_command.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/reporters/atomic_file.hpp"
#include "platforms/efficiency_profile_writer.hpp"
#include "platforms/input_error.hpp"
#include "platforms/names.hpp"
#include "sim/cli/trace_inputs.hpp"
#include "sim/scenario/relative_paths.hpp"
#include "trainsim_version.hpp"
#include "workloads/kineto/collective_fit.hpp"
#include "workloads/kineto/profile_fit.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& options) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Fit the scenario GPU's efficiency profile and the collective constants to PyTorch profiler traces");
  cmd->add_option("traces", options.traces,
                  "PyTorch profiler traces (*.json[.gz]), one per rank, or folders of them")
      ->required();
  cmd->add_option("--scenario", options.scenario, "The scenario of the traced job (its cluster, GPU, model)")
      ->required();
  cmd->add_option("--out", options.out_dir, "Output folder (default runs/calibrate-<scenario name>)");
  cmd->add_option("--name", options.name,
                  "The fitted profile's name and file stem (default <gpu>-calibrated)");
  cmd->add_option(
      "--classes", options.classes,
      "A kernel class table to use instead of the built-in one (workloads/kineto/kernel_classes.yaml)");
  cmd->add_option("-s,--set", options.overrides,
                  "Override a scenario value, KEY=VALUE with a dotted key (repeatable)");
  cmd->add_flag("-q,--quiet", options.quiet, "Print only the files written");
  return cmd;
}

namespace {

using nlohmann::json;

std::string percent(double measured, double predicted) {
  if (measured <= 0)
    return "-";
  return fmt::format("{:+.1f}%", 100 * (predicted / measured - 1));
}

std::string ms(double s) {
  return fmt::format("{:.3f}", s * 1e3);
}

// The scenario document that names the fitted profile and sets the fitted
// collective constants: the input's (its relative paths anchored, since it
// is written elsewhere), the GPU turned into a map with efficiency_profile.
std::string calibrated_scenario(YAML::Node root, const std::string& scenario_file,
                                const std::string& scenario_name, const platforms::GpuSpec& gpu,
                                const std::string& profile_file, const kineto::CollectiveFit& collectives,
                                const std::string& traces) {
  scenario::anchor_relative_paths(root, fs::path(scenario_file).parent_path());
  if (!root["cluster"] || !root["cluster"].IsMap())
    root["cluster"] = YAML::Node(YAML::NodeType::Map);
  YAML::Node cluster = root["cluster"];
  YAML::Node g = cluster["gpu"];
  if (g && g.IsMap()) {
    g["efficiency_profile"] = profile_file;
  } else {
    YAML::Node m(YAML::NodeType::Map);
    m["base"] = gpu.name;
    m["name"] = gpu.name;
    m["efficiency_profile"] = profile_file;
    cluster["gpu"] = m;
  }
  for (const auto& l : collectives.links)
    for (const auto& [key, value] : l.keys) {
      // "cluster.nvlink.efficiency" -> cluster[nvlink][efficiency]
      const std::string rest = key.substr(key.find('.') + 1);
      const std::string section = rest.substr(0, rest.find('.'));
      const std::string field = rest.substr(rest.find('.') + 1);
      if (!cluster[section] || !cluster[section].IsMap())
        cluster[section] = YAML::Node(YAML::NodeType::Map);
      cluster[section][field] = value;
    }
  root["name"] = platforms::name_from_text(
      scenario_name.substr(0, platforms::kMaxNameLength - 11) + "-calibrated", "calibrated");
  YAML::Emitter e;
  e << root;
  return fmt::format(
      "# {} calibrated by trainsim {} on {}:\n"
      "# cluster.gpu.efficiency_profile names the profile fitted to the traces; the collective constants\n"
      "# (nvlink / fabric efficiency, hop latency) are the fitted ones where the traces had NCCL metadata.\n"
      "# Hold it against the traces: trainsim diff {} --scenario <this file>\n{}\n",
      scenario_file, version_string, traces, traces, e.c_str());
}

json fit_json(const kineto::ProfileFit& fit, const kineto::CollectiveFit& collectives) {
  json parts = json::array(), classes = json::array(), links = json::array();
  for (const auto& p : fit.parts) {
    json knees = json::object();
    for (const auto& [name, v] : p.knees)
      knees[name] = {{"before", v.first}, {"after", v.second}};
    parts.push_back({{"part", p.part},
                     {"method", p.method},
                     {"ops", p.samples},
                     {"kernels", p.kernels},
                     {"measured_s", p.measured_s},
                     {"predicted_before_s", p.predicted_before_s},
                     {"predicted_after_s", p.predicted_after_s},
                     {"rms_error_before", p.rms_error_before},
                     {"rms_error_after", p.rms_error_after},
                     {"peak_fraction_before", p.peak_fraction_before},
                     {"peak_fraction_after", p.peak_fraction_after},
                     {"knees", knees},
                     {"note", p.note}});
  }
  for (const auto& c : fit.classes)
    classes.push_back({{"class", c.kernel_class},
                       {"ops", c.samples},
                       {"kernels", c.kernels},
                       {"measured_s", c.measured_s},
                       {"predicted_s", c.predicted_s},
                       {"total_error", c.measured_s > 0 ? c.predicted_s / c.measured_s - 1 : 0.0},
                       {"rms_error", c.rms_error},
                       {"unshaped_ops", c.unshaped},
                       {"unshaped_s", c.unshaped_s}});
  for (const auto& l : collectives.links) {
    json keys = json::object();
    for (const auto& [k, v] : l.keys)
      keys[k] = v;
    links.push_back({{"link", l.link},
                     {"samples", l.samples},
                     {"bandwidth_Bps", l.bandwidth_Bps},
                     {"efficiency_before", l.efficiency_before},
                     {"efficiency_after", l.efficiency_after},
                     {"hop_latency_before_s", l.hop_latency_before_s},
                     {"hop_latency_after_s", l.hop_latency_after_s},
                     {"launch_latency_s", l.launch_latency_s},
                     {"rms_error_before", l.rms_error_before},
                     {"rms_error_after", l.rms_error_after},
                     {"keys", keys},
                     {"note", l.note}});
  }
  return {
      {"profile", fit.profile.name},
      {"parts", parts},
      {"classes", classes},
      {"host_overhead",
       {{"before_s", fit.host.before_s}, {"after_s", fit.host.after_s}, {"intervals", fit.host.intervals}}},
      {"collectives", links},
      {"notes", fit.notes}};
}

std::string fit_csv(const kineto::ProfileFit& fit, const kineto::CollectiveFit& collectives) {
  std::ostringstream out;
  out << "kind,name,method,ops,kernels,measured_s,predicted_before_s,predicted_after_s,rms_error_before,"
         "rms_error_after,value_before,value_after\n";
  const auto g = [](double v) { return fmt::format("{:.9g}", v); };
  for (const auto& p : fit.parts)
    out << fmt::format("part,{},{},{},{},{},{},{},{},{},{},{}\n", p.part, p.method, p.samples, p.kernels,
                       g(p.measured_s), g(p.predicted_before_s), g(p.predicted_after_s),
                       g(p.rms_error_before), g(p.rms_error_after), g(p.peak_fraction_before),
                       g(p.peak_fraction_after));
  for (const auto& c : fit.classes)
    out << fmt::format("class,{},{},{},{},{},,{},,{},,\n", c.kernel_class, c.samples > 0 ? "shapes" : "none",
                       c.samples, c.kernels, g(c.measured_s), g(c.predicted_s), g(c.rms_error));
  out << fmt::format("host_overhead,host_overhead_per_kernel,{},{},,,,,,,{},{}\n",
                     fit.host.intervals > 0 ? "launch_intervals" : "kept", fit.host.intervals,
                     g(fit.host.before_s), g(fit.host.after_s));
  for (const auto& l : collectives.links) {
    out << fmt::format("collective,{}.efficiency,{},{},,,,,{},{},{},{}\n", l.link,
                       l.samples > 0 ? "nccl_kernels" : "kept", l.samples, g(l.rms_error_before),
                       g(l.rms_error_after), g(l.efficiency_before), g(l.efficiency_after));
    out << fmt::format("collective,{}.hop_latency_s,{},{},,,,,{},{},{},{}\n", l.link,
                       l.samples > 0 ? "nccl_kernels" : "kept", l.samples, g(l.rms_error_before),
                       g(l.rms_error_after), g(l.hop_latency_before_s), g(l.hop_latency_after_s));
  }
  return out.str();
}

void print_fit(std::ostream& out, const kineto::ProfileFit& fit, const kineto::CollectiveFit& collectives,
               const std::string& base) {
  out << fmt::format("\n{:<15} {:>7} {:>7} {:>8} {:>12} | {:>12} {:>8} {:>8} | {:>12} {:>8} {:>8}  {}\n",
                     "profile part", "method", "ops", "kernels", "measured ms", base + " ms", "total",
                     "per op", "fitted ms", "total", "per op", "peak fraction");
  for (const auto& p : fit.parts) {
    if (p.method == "kept") {
      out << fmt::format(
          "{:<15} {:>7} {:>7} {:>8} {:>12} | {:>12} {:>8} {:>8} | {:>12} {:>8} {:>8}  {:.3g} (kept)\n",
          p.part, p.method, "-", "-", "-", "-", "-", "-", "-", "-", "-", p.peak_fraction_after);
      continue;
    }
    std::string knees;
    for (const auto& [name, v] : p.knees)
      if (v.first != v.second)
        knees += fmt::format(", {} knee {:.3g} -> {:.3g}", name, v.first, v.second);
    out << fmt::format(
        "{:<15} {:>7} {:>7} {:>8} {:>12} | {:>12} {:>8} {:>7.1f}% | {:>12} {:>8} {:>7.1f}%  {:.3g} -> "
        "{:.3g}{}\n",
        p.part, p.method, p.samples, p.kernels, ms(p.measured_s), ms(p.predicted_before_s),
        percent(p.measured_s, p.predicted_before_s), 100 * p.rms_error_before, ms(p.predicted_after_s),
        percent(p.measured_s, p.predicted_after_s), 100 * p.rms_error_after, p.peak_fraction_before,
        p.peak_fraction_after, knees);
    if (!p.note.empty())
      out << "                  " << p.note << "\n";
  }
  out << fmt::format("\n{:<16} {:>7} {:>8} {:>12} {:>12} {:>8} {:>8}  {}\n", "fit error by class", "ops",
                     "kernels", "measured ms", "fitted ms", "total", "per op",
                     "not fitted (no usable shapes)");
  for (const auto& c : fit.classes)
    out << fmt::format("{:<16} {:>7} {:>8} {:>12} {:>12} {:>8} {:>7.1f}%  {}\n", c.kernel_class, c.samples,
                       c.kernels, ms(c.measured_s), ms(c.predicted_s), percent(c.measured_s, c.predicted_s),
                       100 * c.rms_error,
                       c.unshaped > 0 ? fmt::format("{} ops, {} ms", c.unshaped, ms(c.unshaped_s)) : "");
  out << fmt::format("\nhost overhead per kernel: {:.3g} us -> {:.3g} us ({})\n", fit.host.before_s * 1e6,
                     fit.host.after_s * 1e6,
                     fit.host.intervals > 0 ? fmt::format("median of {} launch intervals", fit.host.intervals)
                                            : std::string("no host launches in the traces: kept"));
  for (const auto& l : collectives.links) {
    if (l.samples == 0) {
      out << fmt::format("collectives over {}: no samples, kept (efficiency {:.3g}, hop latency {:.3g} us)\n",
                         l.link, l.efficiency_before, l.hop_latency_before_s * 1e6);
      continue;
    }
    out << fmt::format(
        "collectives over {}: efficiency {:.3g} -> {:.3g}, hop latency {:.3g} us -> {:.3g} us ({} sizes, "
        "error "
        "per sample {:.1f}% -> {:.1f}%){}\n",
        l.link, l.efficiency_before, l.efficiency_after, l.hop_latency_before_s * 1e6,
        l.hop_latency_after_s * 1e6, l.samples, 100 * l.rms_error_before, 100 * l.rms_error_after,
        l.note.empty() ? "" : "; " + l.note);
  }
  for (const auto& n : collectives.notes)
    out << "  " << n << "\n";
  for (const auto& n : fit.notes)
    out << "  " << n << "\n";
}

}  // namespace

int calibrate_command(const CalibrateOptions& options) {
  const auto loaded = load_scenario_for_traces(options.scenario, options.overrides, {.check_memory = false});
  const YAML::Node& root = loaded.document;
  const scenario::Scenario& s = loaded.scenario;
  if (const auto message = platforms::invalid_name_message(options.name);
      !options.name.empty() && !message.empty())
    throw platforms::InputError({fmt::format("--name {}: {}", options.name, message)});
  const auto classes = kernel_class_table(options.classes);
  const auto traces = read_measured_traces(options.traces, classes);
  const auto notes = check_traces_against(traces, s);

  // One GPU type: the one of the traced ranks.
  const platforms::GpuSpec& gpu = s.cluster.gpu_of(traces.front().rank);
  for (const auto& t : traces)
    if (s.cluster.gpu_of(t.rank).name != gpu.name)
      throw platforms::InputError(
          {fmt::format("{}: rank {} is a {} in the scenario, rank {} a {} (expected the traces of one GPU "
                       "type: calibrate each "
                       "type's ranks apart)",
                       t.path, t.rank, s.cluster.gpu_of(t.rank).name, traces.front().rank, gpu.name)});
  const auto& base = platforms::efficiency_profile_of(gpu);
  const std::string name =
      options.name.empty() ? platforms::name_from_text(gpu.name + "-calibrated", "calibrated") : options.name;
  std::string trace_list;
  for (const auto& p : options.traces)
    trace_list += (trace_list.empty() ? "" : " ") + p;
  const auto fit = kineto::fit_profile(
      traces, classes, gpu, base,
      {.name = name,
       .source = fmt::format("fitted by trainsim {} calibrate to {} ({} traced on {}), from {}",
                             version_string, trace_list, describe_ranks(traces),
                             traces.front().gpu_name.empty() ? "an unnamed GPU" : traces.front().gpu_name,
                             base.name)});
  const auto collectives = kineto::fit_collectives(traces, classes, s.cluster);

  const fs::path dir =
      options.out_dir.empty() ? fs::path("runs") / ("calibrate-" + s.name) : fs::path(options.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw platforms::InputError({fmt::format("{}: cannot create: {}", dir.string(), ec.message())});
  const std::string profile_file = name + ".yaml";
  const auto header = fmt::format(
      "Efficiency curves of {} fitted by trainsim {} calibrate to the PyTorch profiler traces\n{}\n"
      "from the profile {}; the fit's error per part and per kernel class: fit.csv beside this file.\n"
      "Name it in a scenario: cluster: {{gpu: {{base: {}, name: {}, efficiency_profile: {}}}}}",
      gpu.name, version_string, trace_list, base.name, gpu.name, gpu.name, profile_file);
  analysis::write_file_atomically(dir / profile_file, [&](std::ostream& o) {
    o << platforms::efficiency_profile_yaml(fit.profile, header);
  });
  analysis::write_file_atomically(dir / "fit.csv", [&](std::ostream& o) { o << fit_csv(fit, collectives); });
  analysis::write_file_atomically(dir / "fit.json",
                                  [&](std::ostream& o) { o << fit_json(fit, collectives).dump(2) << "\n"; });
  analysis::write_file_atomically(dir / "scenario.yaml", [&](std::ostream& o) {
    o << calibrated_scenario(YAML::Clone(root), options.scenario, s.name, gpu, profile_file, collectives,
                             trace_list);
  });

  std::size_t steps = 0, kernels = 0;
  for (const auto& t : traces) {
    steps += t.steps.size();
    kernels += t.kernels.size();
  }
  if (root["cluster"] && root["cluster"]["groups"])
    std::cerr << fmt::format(
        "note: {} is a mixed cluster (cluster.groups): scenario.yaml sets the profile at the cluster level, "
        "which a "
        "group's own gpu overrides; name {} in the group of the traced GPUs (gpu: {{efficiency_profile: "
        "...}})\n",
        options.scenario, profile_file);
  if (!options.quiet) {
    std::cout << fmt::format(
        "trainsim calibrate: {} trace{} ({}, {}; {} steps, {} GPU kernels) against {} ({}, "
        "profile {})\n",
        traces.size(), traces.size() == 1 ? "" : "s", describe_ranks(traces),
        traces.front().gpu_name.empty() ? "GPU not recorded" : traces.front().gpu_name, steps, kernels,
        s.name, gpu.name, base.name);
    for (const auto& n : notes)
      std::cout << "  note: " << n << "\n";
    print_fit(std::cout, fit, collectives, base.name);
  }
  std::cout << fmt::format("\nwrote {} (the fitted profile), {} (the scenario naming it), {}, {}\n",
                           (dir / profile_file).string(), (dir / "scenario.yaml").string(),
                           (dir / "fit.csv").string(), (dir / "fit.json").string());
  if (!options.quiet)
    std::cout << fmt::format("next: trainsim diff {} --scenario {}\n", trace_list,
                             (dir / "scenario.yaml").string());
  return 0;
}

}  // namespace trainsim::cli
