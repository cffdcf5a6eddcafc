#include "analysis/reporters/svg_style.hpp"

#include <fmt/format.h>

#include <cmath>

namespace trainsim::analysis::svg {

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string_view colour_of(const workloads::Task& task) {
  using workloads::TaskKind;
  switch (task.kind) {
    case TaskKind::forward:
      return "#4c78a8";
    case TaskKind::backward:
      return "#54a24b";
    case TaskKind::backward_input:
      return "#88d27a";
    case TaskKind::backward_weight:
      return "#2f7d32";
    case TaskKind::optimizer:
      return "#b279a2";
    case TaskKind::compute:
      return "#6b9ac4";
    case TaskKind::send:
    case TaskKind::collective:
      break;
  }
  switch (task.comm) {
    case workloads::CommKind::tp:
      return "#f58518";
    case workloads::CommKind::pp:
      return "#e45756";
    case workloads::CommKind::dp:
      return "#9d755d";
    case workloads::CommKind::cp:
      return "#72b7b2";
    case workloads::CommKind::ep:
      return "#eeca3b";
    case workloads::CommKind::none:
      break;
  }
  return "#bab0ac";
}

std::string_view colour_of(BubbleCause cause) {
  switch (cause) {
    case BubbleCause::warmup_cooldown:
      return "#9ecae9";
    case BubbleCause::p2p_wait:
      return "#e45756";
    case BubbleCause::collective_wait:
      return "#f58518";
    case BubbleCause::straggler:
      return "#eeca3b";
    case BubbleCause::dp_comm:
      return "#9d755d";
    case BubbleCause::optimizer:
      return "#b279a2";
    case BubbleCause::expert_imbalance:
      return "#ff9da6";
  }
  return "#bab0ac";
}

std::vector<std::pair<std::string, std::string>> gantt_legend() {
  return {{"forward", "#4c78a8"},          {"backward", "#54a24b"},
          {"backward (input)", "#88d27a"}, {"backward (weight)", "#2f7d32"},
          {"optimizer", "#b279a2"},        {"TP comm", "#f58518"},
          {"PP p2p", "#e45756"},           {"DP comm", "#9d755d"},
          {"CP comm", "#72b7b2"},          {"EP all-to-all", "#eeca3b"},
          {"other comm", "#bab0ac"},       {"idle (bubble)", "#f4f4f4"}};
}

std::vector<double> ticks(double max, int count) {
  std::vector<double> out;
  if (!(max > 0) || !std::isfinite(max) || count <= 0)
    return {0};
  const double raw = max / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  // Up to the first tick at or above max, so that an axis covers the data.
  for (int i = 0;; ++i) {
    out.push_back(i * step);
    if (i * step >= max * (1 - 1e-9))
      break;
  }
  return out;
}

std::string time_label(double seconds, double axis_max_s) {
  if (axis_max_s >= 2)
    return fmt::format("{:g} s", seconds);
  if (axis_max_s >= 2e-3)
    return fmt::format("{:g} ms", std::round(seconds * 1e6) / 1e3);
  return fmt::format("{:g} us", std::round(seconds * 1e9) / 1e3);
}

std::string bytes_label(double bytes) {
  if (bytes == 0)
    return "0";
  const double gib = 1024.0 * 1024 * 1024;
  if (bytes >= gib)
    return fmt::format("{:g} GiB", std::round(bytes / gib * 100) / 100);
  return fmt::format("{:g} MiB", std::round(bytes / (1024.0 * 1024) * 10) / 10);
}

std::string open_document(double width, double height, std::string_view title) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
      "font-size=\"12\">\n"
      "<title>{2}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{2}</text>\n",
      width, height, escape(title));
}

}  // namespace trainsim::analysis::svg
