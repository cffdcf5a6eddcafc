#include "platforms/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

namespace trainsim::units {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Splits "1.5us" into 1.5 and "us". Rejects empty numbers, trailing junk in
// the number, negative values and non-finite values.
struct Split {
  double value;
  std::string_view suffix;
};

std::optional<Split> split_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  std::size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' || text[end] == 'e' ||
          text[end] == 'E' || text[end] == '-' || text[end] == '+')) {
    // An 'e' or 'E' counts as an exponent only when a digit or sign follows.
    if ((text[end] == 'e' || text[end] == 'E') &&
        (end + 1 >= text.size() || !(std::isdigit(static_cast<unsigned char>(text[end + 1])) ||
                                     text[end + 1] == '-' || text[end + 1] == '+')))
      break;
    ++end;
  }
  if (end == 0)
    return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, value);
  if (ec != std::errc() || ptr != text.data() + end || !std::isfinite(value))
    return std::nullopt;
  std::string_view suffix = text.substr(end);
  while (!suffix.empty() && suffix.front() == ' ')
    suffix.remove_prefix(1);
  return Split{value, suffix};
}

// What a kind of quantity may be: 0 or within [min, max] (`min_exclusive`:
// above min), with `range_text` saying it in the error.
struct Range {
  double min;
  double max;
  bool zero_allowed;
  bool min_exclusive;
  bool max_exclusive;
  std::string_view range_text;
};

template <std::size_t N>
double parse_with(std::string_view text, const std::array<Suffix, N>& suffixes, std::string_view what,
                  std::string_view examples, const Range& range) {
  auto fail = [&](std::string_view why) -> double {
    throw UnitError(fmt::format("'{}' is not a {}: {} (expected a number with a unit, for example {})", text,
                                what, why, examples));
  };
  auto split = split_number(text);
  if (!split)
    return fail("it does not start with a number");
  if (split->suffix.empty())
    return fail("the unit is missing");
  if (split->value < 0)
    return fail("it is negative");
  for (const auto& s : suffixes) {
    if (s.text != split->suffix)
      continue;
    const double value = split->value * s.factor;
    if (value == 0 && range.zero_allowed)
      return 0;
    const bool low = range.min_exclusive ? value <= range.min : value < range.min;
    const bool high = range.max_exclusive ? value >= range.max : value > range.max;
    if (!std::isfinite(value) || low || high)
      throw UnitError(fmt::format("'{}' is out of range (expected a {} {})", text, what, range.range_text));
    return value;
  }
  return fail(fmt::format("unknown unit '{}'", split->suffix));
}

constexpr double kKi = 1024.0, kMi = kKi * 1024, kGi = kMi * 1024, kTi = kGi * 1024, kPi = kTi * 1024;

constexpr std::array<Suffix, 14> kByteSuffixes{{{"B", 1},
                                                {"kB", 1e3},
                                                {"KB", 1e3},
                                                {"MB", 1e6},
                                                {"GB", 1e9},
                                                {"TB", 1e12},
                                                {"PB", 1e15},
                                                {"KiB", kKi},
                                                {"kiB", kKi},
                                                {"MiB", kMi},
                                                {"GiB", kGi},
                                                {"TiB", kTi},
                                                {"PiB", kPi},
                                                {"bytes", 1}}};

// Bandwidth: bits per second ("bps") are divided by 8.
constexpr std::array<Suffix, 24> kBandwidthSuffixes{
    {{"bps", 1 / 8.0},   {"kbps", 1e3 / 8},  {"Kbps", 1e3 / 8},  {"Mbps", 1e6 / 8},  {"Gbps", 1e9 / 8},
     {"Tbps", 1e12 / 8}, {"Kibps", kKi / 8}, {"Mibps", kMi / 8}, {"Gibps", kGi / 8}, {"Bps", 1},
     {"kBps", 1e3},      {"KBps", 1e3},      {"MBps", 1e6},      {"GBps", 1e9},      {"TBps", 1e12},
     {"KiBps", kKi},     {"MiBps", kMi},     {"GiBps", kGi},     {"TiBps", kTi},     {"B/s", 1},
     {"kB/s", 1e3},      {"MB/s", 1e6},      {"GB/s", 1e9},      {"TB/s", 1e12}}};

constexpr std::array<Suffix, 11> kDurationSuffixes{{{"ps", 1e-12},
                                                    {"ns", 1e-9},
                                                    {"us", 1e-6},
                                                    {"µs", 1e-6},
                                                    {"ms", 1e-3},
                                                    {"s", 1},
                                                    {"min", 60},
                                                    {"h", 3600},
                                                    {"hours", 3600},
                                                    {"d", 86400},
                                                    {"days", 86400}}};

constexpr std::array<Suffix, 18> kFlopRateSuffixes{{{"FLOPS", 1},
                                                    {"GFLOPS", 1e9},
                                                    {"TFLOPS", 1e12},
                                                    {"PFLOPS", 1e15},
                                                    {"FLOP/s", 1},
                                                    {"GFLOP/s", 1e9},
                                                    {"TFLOP/s", 1e12},
                                                    {"PFLOP/s", 1e15},
                                                    {"flops", 1},
                                                    {"Gflops", 1e9},
                                                    {"Tflops", 1e12},
                                                    {"Pflops", 1e15},
                                                    {"f", 1},
                                                    {"Gf", 1e9},
                                                    {"Tf", 1e12},
                                                    {"Pf", 1e15},
                                                    {"TFLOPs", 1e12},
                                                    {"GFLOPs", 1e9}}};

constexpr std::array<Suffix, 4> kPowerSuffixes{{{"W", 1}, {"mW", 1e-3}, {"kW", 1e3}, {"MW", 1e6}}};

std::string format_scaled(double value, const std::array<std::pair<double, std::string_view>, 5>& scales) {
  for (const auto& [factor, name] : scales)
    if (std::fabs(value) >= factor)
      return fmt::format("{:.3g}{}", value / factor, name);
  return fmt::format("{:.3g}{}", value / scales.back().first, scales.back().second);
}

}  // namespace

double parse_bytes(std::string_view text) {
  return parse_with(text, kByteSuffixes, "size", "\"80GiB\", \"1.5GB\" or \"512B\"",
                    {0, kMaxBytes, true, false, false, "of at most 1PiB"});
}
double parse_bandwidth_Bps(std::string_view text) {
  return parse_with(text, kBandwidthSuffixes, "bandwidth",
                    "\"400Gbps\" (bits per second) or \"900GBps\" (bytes per second)",
                    {kMinBandwidth_Bps, kMaxBandwidth_Bps, false, true, true, "above 1bps and below 1PBps"});
}
double parse_duration_s(std::string_view text) {
  return parse_with(
      text, kDurationSuffixes, "duration", "\"1.5us\", \"10ms\" or \"2s\"",
      {kMinDuration_s, kMaxDuration_s, true, false, false, "of 0 or between 1ps and 100 years"});
}
double parse_latency_s(std::string_view text) {
  return parse_with(text, kDurationSuffixes, "latency", "\"1.5us\", \"10ms\" or \"2s\"",
                    {kMinDuration_s, kMaxLatency_s, true, false, false, "of 0 or between 1ps and 1h"});
}
double parse_flop_rate(std::string_view text) {
  return parse_with(text, kFlopRateSuffixes, "compute rate", "\"312TFLOPS\" or \"989TFLOP/s\"",
                    {1, kMaxFlopRate, true, false, true, "of 0 or between 1FLOPS and 1e21FLOPS"});
}
double parse_power_W(std::string_view text) {
  return parse_with(text, kPowerSuffixes, "power", "\"400W\" or \"1.2kW\"",
                    {0, kMaxPower_W, true, false, false, "of at most 1MW"});
}

std::string format_bytes(double bytes) {
  return format_scaled(bytes, {{{kTi, "TiB"}, {kGi, "GiB"}, {kMi, "MiB"}, {kKi, "KiB"}, {1, "B"}}});
}
std::string format_bandwidth(double bytes_per_s) {
  return format_scaled(bytes_per_s,
                       {{{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}, {1, "B/s"}}});
}
std::string format_duration(double seconds) {
  return format_scaled(seconds, {{{3600, "h"}, {1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}}});
}

}  // namespace trainsim::units
