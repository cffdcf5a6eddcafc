#include "platforms/number_format.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

namespace trainsim::units {
namespace {

struct Scale {
  double factor;
  std::string_view prefix;
};

// Three significant digits under the largest scale the value reaches; a
// value that rounds up to 1000 of one scale moves to the next ("1.00GiB",
// not "1.02e+03MiB").
template <std::size_t N>
std::string three_digits(double value, const std::array<Scale, N>& scales, std::string_view unit) {
  if (value == 0 || !std::isfinite(value))
    return fmt::format("{}{}", value == 0 ? 0.0 : value, unit);
  std::size_t i = 0;
  while (i + 1 < N && std::fabs(value) < scales[i].factor)
    ++i;
  // Rounded to three digits, 999.7 of one scale is 1000: one scale up.
  if (i > 0 && std::fabs(value) / scales[i].factor >= 999.5)
    --i;
  return fmt::format("{:.3g}{}{}", value / scales[i].factor, scales[i].prefix, unit);
}

constexpr double kKibi = 1024.0;
constexpr std::array<Scale, 6> kBinary{{{kKibi * kKibi * kKibi * kKibi * kKibi, "Pi"},
                                        {kKibi * kKibi * kKibi * kKibi, "Ti"},
                                        {kKibi * kKibi * kKibi, "Gi"},
                                        {kKibi * kKibi, "Mi"},
                                        {kKibi, "Ki"},
                                        {1, ""}}};
constexpr std::array<Scale, 10> kDecimal{{{1e15, "P"},
                                          {1e12, "T"},
                                          {1e9, "G"},
                                          {1e6, "M"},
                                          {1e3, "k"},
                                          {1, ""},
                                          {1e-3, "m"},
                                          {1e-6, "u"},
                                          {1e-9, "n"},
                                          {1e-12, "p"}}};

}  // namespace

std::string format_bytes(double bytes) {
  return three_digits(bytes, kBinary, "B");
}

std::string format_bandwidth(double bytes_per_s) {
  // Decimal prefixes, as network and NVLink datasheets (and nccl-tests) give them.
  static constexpr std::array<Scale, 5> kRates{{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}}};
  return three_digits(bytes_per_s, kRates, "B/s");
}

std::string format_duration(double seconds) {
  if (std::fabs(seconds) >= 3600)
    return fmt::format("{:.3g}h", seconds / 3600);
  static constexpr std::array<Scale, 4> kTimes{{{1, ""}, {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}}};
  if (std::fabs(seconds) >= 999.5)
    return fmt::format("{:.4g}s", seconds);  // up to an hour: "1200s", "3599s"
  return three_digits(seconds, kTimes, "s");
}

std::string format_si(double value, std::string_view unit) {
  return three_digits(value, kDecimal, unit);
}

std::string format_percent(double fraction) {
  return fmt::format("{:.1f}%", 100 * fraction);
}

std::string format_ratio(double ratio) {
  return fmt::format("{:.2f}x", ratio);
}

std::string format_count(double value) {
  return fmt::format("{:.0f}", std::isfinite(value) ? value : 0.0);
}

std::string format_machine(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0)
    return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{}", value);
}

}  // namespace trainsim::units
