#include "platforms/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace trainsim::units {
namespace {

// A unit and its scale: value x 10^decimal_exponent x factor. Powers of ten
// are applied to the decimal text itself, so "5us" parses to the double
// nearest 5e-6 (5 x 1e-6 would give 4.9999999999999996e-06); `factor` is
// exact for powers of two (IEC prefixes, bits) and whole numbers (minutes).
struct Suffix {
  std::string_view text;
  int decimal_exponent;
  double factor = 1;
};

// Splits "1.5us" into "1.5" and "us". Rejects empty numbers, trailing junk
// in the number, negative values and non-finite values.
struct Split {
  std::string_view number;
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
  return Split{text.substr(0, end), value, suffix};
}

// The number's text scaled by 10^exponent, rounded once: the mantissa is
// kept as written and the exponent shifted ("5" and -6 read as "5e-6").
double scale_decimal(std::string_view number, int exponent) {
  double value = 0;
  // Out of a double's range (overflow or underflow): NaN, which the range
  // check refuses, rather than from_chars' untouched 0.
  constexpr double kUnreadable = std::numeric_limits<double>::quiet_NaN();
  if (exponent == 0) {
    const auto r = std::from_chars(number.data(), number.data() + number.size(), value);
    return r.ec == std::errc{} ? value : kUnreadable;
  }
  std::string_view mantissa = number;
  long long written_exponent = 0;
  if (const auto e = number.find_first_of("eE"); e != std::string_view::npos) {
    mantissa = number.substr(0, e);
    std::string_view rest = number.substr(e + 1);
    if (!rest.empty() && rest.front() == '+')
      rest.remove_prefix(1);
    std::from_chars(rest.data(), rest.data() + rest.size(), written_exponent);
  }
  const std::string text = fmt::format("{}e{}", mantissa, written_exponent + exponent);
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  return r.ec == std::errc{} ? value : kUnreadable;
}

// Unit suffixes match ignoring case ("400gbps", "10MS"), except a b / B,
// which is a bit or a byte and must be written as meant.
bool same_unit(std::string_view written, std::string_view unit) {
  if (written.size() != unit.size())
    return false;
  for (std::size_t i = 0; i < unit.size(); ++i) {
    const char a = written[i], b = unit[i];
    if (a == b)
      continue;
    if (a == 'b' || a == 'B' || b == 'b' || b == 'B')
      return false;
    if (std::tolower(static_cast<unsigned char>(a)) != std::tolower(static_cast<unsigned char>(b)))
      return false;
  }
  return true;
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
  auto in_range = [&](double value) {
    if (value == 0 && range.zero_allowed)
      return 0.0;
    const bool low = range.min_exclusive ? value <= range.min : value < range.min;
    const bool high = range.max_exclusive ? value >= range.max : value > range.max;
    if (!std::isfinite(value) || low || high)
      throw UnitError(fmt::format("'{}' is out of range (expected a {} {})", text, what, range.range_text));
    return value;
  };
  auto scaled = [&](const Suffix& s) {
    return in_range(scale_decimal(split->number, s.decimal_exponent) * s.factor);
  };
  for (const auto& s : suffixes)
    if (s.text == split->suffix)
      return scaled(s);
  // Not as written: any case, when every unit it could be means the same.
  const Suffix* match = nullptr;
  for (const auto& s : suffixes) {
    if (!same_unit(split->suffix, s.text))
      continue;
    if (match != nullptr && (match->decimal_exponent != s.decimal_exponent || match->factor != s.factor))
      return fail(fmt::format("the unit '{}' is ambiguous ('{}' or '{}'?); write its case as meant",
                              split->suffix, match->text, s.text));
    match = match == nullptr ? &s : match;
  }
  if (match != nullptr)
    return scaled(*match);
  std::string hint;
  if (split->suffix.find_first_of("bB") != std::string_view::npos)
    hint = " (a lower-case b is a bit, an upper-case B a byte)";
  return fail(fmt::format("unknown unit '{}'{}", split->suffix, hint));
}

constexpr double kKi = 1024.0, kMi = kKi * 1024, kGi = kMi * 1024, kTi = kGi * 1024, kPi = kTi * 1024;

constexpr std::array<Suffix, 14> kByteSuffixes{{{"B", 0},
                                                {"kB", 3},
                                                {"KB", 3},
                                                {"MB", 6},
                                                {"GB", 9},
                                                {"TB", 12},
                                                {"PB", 15},
                                                {"KiB", 0, kKi},
                                                {"kiB", 0, kKi},
                                                {"MiB", 0, kMi},
                                                {"GiB", 0, kGi},
                                                {"TiB", 0, kTi},
                                                {"PiB", 0, kPi},
                                                {"bytes", 0}}};

// Bandwidth: bits per second ("bps", "b/s") are divided by 8 (exactly).
constexpr std::array<Suffix, 30> kBandwidthSuffixes{{{"bps", 0, 1 / 8.0},
                                                     {"kbps", 3, 1 / 8.0},
                                                     {"Kbps", 3, 1 / 8.0},
                                                     {"Mbps", 6, 1 / 8.0},
                                                     {"Gbps", 9, 1 / 8.0},
                                                     {"Tbps", 12, 1 / 8.0},
                                                     {"b/s", 0, 1 / 8.0},
                                                     {"kb/s", 3, 1 / 8.0},
                                                     {"Mb/s", 6, 1 / 8.0},
                                                     {"Gb/s", 9, 1 / 8.0},
                                                     {"Tb/s", 12, 1 / 8.0},
                                                     {"Kibps", 0, kKi / 8},
                                                     {"Mibps", 0, kMi / 8},
                                                     {"Gibps", 0, kGi / 8},
                                                     {"Bps", 0},
                                                     {"kBps", 3},
                                                     {"KBps", 3},
                                                     {"MBps", 6},
                                                     {"GBps", 9},
                                                     {"TBps", 12},
                                                     {"KiBps", 0, kKi},
                                                     {"MiBps", 0, kMi},
                                                     {"GiBps", 0, kGi},
                                                     {"TiBps", 0, kTi},
                                                     {"B/s", 0},
                                                     {"kB/s", 3},
                                                     {"MB/s", 6},
                                                     {"GB/s", 9},
                                                     {"TB/s", 12},
                                                     {"GiB/s", 0, kGi}}};

constexpr std::array<Suffix, 11> kDurationSuffixes{{{"ps", -12},
                                                    {"ns", -9},
                                                    {"us", -6},
                                                    {"µs", -6},
                                                    {"ms", -3},
                                                    {"s", 0},
                                                    {"min", 0, 60},
                                                    {"h", 0, 3600},
                                                    {"hours", 0, 3600},
                                                    {"d", 0, 86400},
                                                    {"days", 0, 86400}}};

constexpr std::array<Suffix, 18> kFlopRateSuffixes{{{"FLOPS", 0},
                                                    {"GFLOPS", 9},
                                                    {"TFLOPS", 12},
                                                    {"PFLOPS", 15},
                                                    {"FLOP/s", 0},
                                                    {"GFLOP/s", 9},
                                                    {"TFLOP/s", 12},
                                                    {"PFLOP/s", 15},
                                                    {"flops", 0},
                                                    {"Gflops", 9},
                                                    {"Tflops", 12},
                                                    {"Pflops", 15},
                                                    {"f", 0},
                                                    {"Gf", 9},
                                                    {"Tf", 12},
                                                    {"Pf", 15},
                                                    {"TFLOPs", 12},
                                                    {"GFLOPs", 9}}};

constexpr std::array<Suffix, 4> kPowerSuffixes{{{"W", 0}, {"mW", -3}, {"kW", 3}, {"MW", 6}}};

template <std::size_t N>
std::vector<std::string_view> texts(const std::array<Suffix, N>& suffixes) {
  std::vector<std::string_view> out;
  for (const auto& s : suffixes)
    out.push_back(s.text);
  return out;
}

}  // namespace

std::vector<std::string_view> unit_suffixes(Quantity quantity) {
  switch (quantity) {
    case Quantity::bytes:
      return texts(kByteSuffixes);
    case Quantity::bandwidth:
      return texts(kBandwidthSuffixes);
    case Quantity::duration:
      return texts(kDurationSuffixes);
    case Quantity::flop_rate:
      return texts(kFlopRateSuffixes);
    case Quantity::power:
      return texts(kPowerSuffixes);
  }
  return {};
}

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

double parse_message_size_bytes(std::string_view text) {
  static constexpr std::array<Suffix, 9> kNcclTestsSuffixes{{{"K", 0, kKi},
                                                             {"M", 0, kMi},
                                                             {"G", 0, kGi},
                                                             {"T", 0, kTi},
                                                             {"k", 0, kKi},
                                                             {"m", 0, kMi},
                                                             {"g", 0, kGi},
                                                             {"t", 0, kTi},
                                                             {"", 0}}};
  const auto split = split_number(text);
  if (split && split->value >= 0)
    for (const auto& s : kNcclTestsSuffixes)
      if (s.text == split->suffix) {
        const double bytes = scale_decimal(split->number, 0) * s.factor;
        if (std::isfinite(bytes) && bytes <= kMaxBytes)
          return bytes;
        throw UnitError(fmt::format("'{}' is out of range (expected a message size of at most 1PiB)", text));
      }
  return parse_with(text, kByteSuffixes, "message size",
                    "\"8\" (bytes), \"128M\" (MiB, as nccl-tests), \"1MiB\" or \"1.5GB\"",
                    {0, kMaxBytes, true, false, false, "of at most 1PiB"});
}

}  // namespace trainsim::units
