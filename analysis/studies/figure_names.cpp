#include "analysis/studies/figure_names.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string_view>
#include <utility>

#include "platforms/number_format.hpp"

namespace trainsim::analysis {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string words(std::string text) {
  for (char& c : text)
    c = c == '_' ? ' ' : c;
  return text;
}

// The columns people look at most, by name.
constexpr std::array<std::pair<std::string_view, std::string_view>, 34> kLabels{{
    {"iteration_time_s", "iteration time"},
    {"tokens_per_s", "throughput"},
    {"tokens_per_s_per_gpu", "tokens/s per GPU"},
    {"tflops_per_gpu", "TFLOP/s per GPU"},
    {"hardware_tflops_per_gpu", "hardware TFLOP/s per GPU"},
    {"mfu", "MFU"},
    {"hfu", "HFU"},
    {"mfu_6n", "MFU (6N)"},
    {"mfu_palm", "MFU (PaLM)"},
    {"mfu_nvidia", "MFU (NVIDIA)"},
    {"compute_fraction", "compute"},
    {"bubble_fraction", "bubble"},
    {"exposed_comm_fraction", "exposed communication"},
    {"peak_memory_bytes", "peak memory"},
    {"energy_per_token_J", "energy per token"},
    {"tokens_per_J", "tokens per joule"},
    {"cluster.gpus", "GPUs"},
    {"cluster.nodes", "nodes"},
    {"cluster.preset", "cluster"},
    {"cluster.name", "cluster"},
    {"model.preset", "model"},
    {"model.name", "model"},
    {"plan.tp", "tensor parallel (tp)"},
    {"plan.pp", "pipeline parallel (pp)"},
    {"plan.dp", "data parallel (dp)"},
    {"plan.context_parallel", "context parallel (cp)"},
    {"plan.expert_parallel", "expert parallel (ep)"},
    {"plan.micro_batch_size", "micro-batch size"},
    {"plan.global_batch_size", "global batch"},
    {"plan.schedule", "schedule"},
    {"plan.precision", "precision"},
    {"plan.zero_stage", "ZeRO stage"},
    {"plan.recompute", "recomputation"},
    {"plan.virtual_stages", "virtual stages"},
}};

// "tokens_per_s" -> {"tokens", "s"}; nothing when the name is not a rate.
std::pair<std::string, std::string> rate_parts(const std::string& name) {
  const auto at = name.rfind("_per_");
  if (at == std::string::npos || at == 0)
    return {};
  std::string per = name.substr(at + 5);
  std::string what = name.substr(0, at);
  if (per.find('_') != std::string::npos && per != "gpu")
    return {};       // "energy_per_token_J": joules (per token), not a rate
  if (per == "gpu")  // "tokens_per_s_per_gpu": a rate of its own, per GPU
    return rate_parts(what);
  return {words(what), per};
}

}  // namespace

nlohmann::ordered_json value_when_absent(const std::string& column) {
  if (column == "plan.precision")
    return "bf16";
  return nullptr;
}

std::string last_component(const std::string& column) {
  const auto dot = column.rfind('.');
  return dot == std::string::npos ? column : column.substr(dot + 1);
}

FigureMeaning figure_meaning(const std::string& column) {
  FigureMeaning m;
  const std::string name = last_component(column);
  for (const auto& [key, label] : kLabels)
    if (key == column || key == name)
      m.label = label;
  if (column.find(".share.") != std::string::npos || ends_with(name, "_fraction") ||
      ends_with(name, "_share") || name == "mfu" || name == "hfu" || name == "utilization" ||
      ends_with(name, "_utilization") || ends_with(name, "_mfu") || name.rfind("mfu_", 0) == 0) {
    m.kind = FigureKind::fraction;
  } else if (const auto [what, per] = rate_parts(name); !per.empty()) {
    m.kind = FigureKind::rate;
    m.unit = fmt::format("{}/{}", what, per == "gpu" ? "GPU" : per);
    if (ends_with(name, "_per_gpu"))
      m.unit = fmt::format("{} per GPU", m.unit);
  } else if (ends_with(name, "_s") || name == "s") {
    m.kind = FigureKind::duration;
  } else if (ends_with(name, "_bytes") || name == "bytes") {
    m.kind = FigureKind::bytes;
  } else if (ends_with(name, "_Bps")) {
    m.kind = FigureKind::bandwidth;
  } else if (ends_with(name, "_J")) {
    m.kind = FigureKind::energy;
  } else if (ends_with(name, "_W")) {
    m.kind = FigureKind::power;
  } else if ((name.find("_per_") == std::string::npos && (name == "gpu" || ends_with(name, "_gpu"))) ||
             name == "stage" || ends_with(name, "_stage") || name == "seed" || name == "point" ||
             name == "exit_status" || ends_with(name, "_rank") || ends_with(name, "_link") ||
             name == "link") {
    m.kind = FigureKind::identifier;
  }
  if (m.label.empty()) {
    // The name without its unit, in words; a nested key keeps its parent.
    std::string_view bare = name;
    for (std::string_view suffix : {"_fraction", "_bytes", "_Bps", "_s", "_J", "_W"})
      if (m.kind != FigureKind::rate && ends_with(bare, suffix) && bare.size() > suffix.size()) {
        bare.remove_suffix(suffix.size());
        break;
      }
    // A nested key is clearest as it is written ("lost_time.by_cause.p2p_wait.gpu_seconds").
    m.label = column.find('.') == std::string::npos ? words(std::string(bare)) : column;
  }
  return m;
}

std::string format_figure(const std::string& column, double value) {
  const auto m = figure_meaning(column);
  switch (m.kind) {
    case FigureKind::fraction:
      return units::format_percent(value);
    case FigureKind::duration:
      return units::format_duration(value);
    case FigureKind::bytes:
      return units::format_bytes(value);
    case FigureKind::bandwidth:
      return units::format_bandwidth(value);
    case FigureKind::energy:
      return units::format_si(value, "J");
    case FigureKind::power:
      return units::format_si(value, "W");
    case FigureKind::rate:
      return units::format_si(value, fmt::format(" {}", m.unit));
    case FigureKind::identifier:
      return units::format_count(value);
    case FigureKind::number:
      break;
  }
  if (value == std::floor(value) && std::abs(value) < 1e15)
    return units::format_count(value);
  return std::abs(value) >= 1e4 ? units::format_si(value, "") : fmt::format("{:.4g}", value);
}

AxisUnit axis_unit(const std::string& column, double largest) {
  const auto m = figure_meaning(column);
  const double a = std::abs(largest);
  switch (m.kind) {
    case FigureKind::fraction:
      return {fmt::format("{} (%)", m.label), 100};
    case FigureKind::duration: {
      if (a >= 1 || a == 0)
        return {fmt::format("{} (s)", m.label), 1};
      if (a >= 1e-3)
        return {fmt::format("{} (ms)", m.label), 1e3};
      return {fmt::format("{} (us)", m.label), 1e6};
    }
    case FigureKind::bytes: {
      const double gib = 1024.0 * 1024 * 1024;
      if (a >= gib)
        return {fmt::format("{} (GiB)", m.label), 1 / gib};
      return {fmt::format("{} (MiB)", m.label), 1 / (1024.0 * 1024)};
    }
    case FigureKind::bandwidth:
      return {fmt::format("{} (GB/s)", m.label), 1e-9};
    case FigureKind::energy:
      return a >= 1e3 ? AxisUnit{fmt::format("{} (kJ)", m.label), 1e-3}
                      : AxisUnit{fmt::format("{} (J)", m.label), 1};
    case FigureKind::power:
      return a >= 1e3 ? AxisUnit{fmt::format("{} (kW)", m.label), 1e-3}
                      : AxisUnit{fmt::format("{} (W)", m.label), 1};
    case FigureKind::rate:
      return {m.label == m.unit ? m.label : fmt::format("{} ({})", m.label, m.unit), 1};
    case FigureKind::identifier:
    case FigureKind::number:
      break;
  }
  return {m.label, 1};
}

}  // namespace trainsim::analysis
