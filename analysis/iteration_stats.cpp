#include "analysis/iteration_stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace trainsim::analysis {

double percentile(std::vector<double> values, double fraction) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const double rank = fraction * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

IterationStats iteration_stats(std::vector<double> times_s) {
  IterationStats s;
  s.times_s = std::move(times_s);
  if (s.times_s.empty())
    return s;
  double sum = 0;
  for (double t : s.times_s)
    sum += t;
  s.mean_s = sum / static_cast<double>(s.times_s.size());
  s.p50_s = percentile(s.times_s, 0.50);
  s.p95_s = percentile(s.times_s, 0.95);
  s.p99_s = percentile(s.times_s, 0.99);
  s.max_s = *std::max_element(s.times_s.begin(), s.times_s.end());
  s.min_s = *std::min_element(s.times_s.begin(), s.times_s.end());
  return s;
}

double student_t_975(int dof) {
  static constexpr std::array<double, 30> kTable = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                                    2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                                    2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                                    2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1)
    return 0;
  if (dof <= 30)
    return kTable[static_cast<std::size_t>(dof - 1)];
  if (dof <= 60)
    return 2.000 + (2.042 - 2.000) * (60.0 - dof) / 30.0;
  return 1.960;
}

ConfidenceInterval confidence_interval_95(const std::vector<double>& values) {
  ConfidenceInterval ci;
  if (values.empty())
    return ci;
  const auto n = static_cast<double>(values.size());
  for (double v : values)
    ci.mean += v / n;
  if (values.size() < 2)
    return ci;
  double ss = 0;
  for (double v : values)
    ss += (v - ci.mean) * (v - ci.mean);
  const double sd = std::sqrt(ss / (n - 1));
  ci.half_width = student_t_975(static_cast<int>(values.size()) - 1) * sd / std::sqrt(n);
  return ci;
}

}  // namespace trainsim::analysis
