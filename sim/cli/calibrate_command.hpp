#pragma once
// `trainsim calibrate TRACE... --scenario S.yaml`: fits the efficiency
// profile of the scenario's GPU and the cluster's collective constants to
// measured PyTorch profiler traces (workloads/kineto/profile_fit,
// collective_fit), writes the profile (the format of
// platforms/efficiency/*.yaml) and a scenario that names it
// (cluster.gpu.efficiency_profile), and prints the fit's error per profile
// part and per kernel class. docs/calibration.md, "Calibrate on your
// cluster".
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct CalibrateOptions {
  std::vector<std::string> traces;  // files or folders, one file per rank
  std::string scenario;
  std::string out_dir;  // empty: runs/calibrate-<scenario name>
  std::string name;     // the profile's name (and file stem); empty: <gpu>-calibrated
  std::string classes;  // --classes FILE: another kernel class table
  std::vector<std::string> overrides;
  bool quiet = false;
};

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& options);
int calibrate_command(const CalibrateOptions& options);

}  // namespace trainsim::cli
