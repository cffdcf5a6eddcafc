#pragma once
// `trainsim diff TRACE... --scenario S.yaml`: runs the scenario and sets its
// step time, busy / idle time, exposed communication, stream busy time,
// kernel-class totals and critical path beside the measured traces', per
// rank and for all ranks (analysis/kineto/trace_diff): a terminal table,
// diff.csv, diff.json, report.html (table and plots) and trace.json (both
// timelines, one Perfetto file). docs/calibration.md, "Calibrate on your
// cluster".
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct DiffOptions {
  std::vector<std::string> traces;
  std::string scenario;
  std::string out_dir;  // empty: runs/diff-<scenario name>
  std::string classes;
  std::vector<std::string> overrides;
  bool allow_oom = false;
  bool quiet = false;
};

CLI::App* add_diff_command(CLI::App& app, DiffOptions& options);
int diff_command(const DiffOptions& options);

}  // namespace trainsim::cli
