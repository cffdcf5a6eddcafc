#pragma once
// The distribution of iteration times over a multi-iteration run
// (`trainsim run --iterations N`) and the spread over seeds (`--seeds K`).
// Pure functions of lists of seconds.
#include <vector>

namespace trainsim::analysis {

struct IterationStats {
  std::vector<double> times_s;
  double mean_s = 0;
  // Percentiles interpolate linearly between order statistics (the
  // "linear" method of numpy.percentile).
  double p50_s = 0;
  double p95_s = 0;
  double p99_s = 0;
  double max_s = 0;
  double min_s = 0;
};
IterationStats iteration_stats(std::vector<double> times_s);
double percentile(std::vector<double> sorted_values, double fraction);

// Mean of per-seed values and the half-width of its 95% confidence interval
// (Student's t with K-1 degrees of freedom; 0 for a single seed).
struct ConfidenceInterval {
  double mean = 0;
  double half_width = 0;
  double low() const { return mean - half_width; }
  double high() const { return mean + half_width; }
};
ConfidenceInterval confidence_interval_95(const std::vector<double>& values);
// Two-sided 97.5% quantile of Student's t with `dof` degrees of freedom.
double student_t_975(int dof);

}  // namespace trainsim::analysis
