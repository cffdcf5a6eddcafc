#pragma once
// `trainsim validate DATASET`: replays every row of a measured dataset
// (vTrain's CSV format, validation_dataset.hpp) as a real simulation, each in
// its own forked child process (one SimGrid engine per process), several at
// once with -j, and prints predicted vs measured iteration time per row and the
// mean absolute percentage error (MAPE) of the fit rows, the check rows and
// all rows. With --metric mfu (or mfu_6n, mfu_palm, mfu_nvidia) it compares
// the dataset's `MFU (%)` column with that summary figure instead.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct ValidateOptions {
  std::string dataset;
  std::string template_file;              // empty: the built-in scenarios/validation/vtrain-a100.yaml
  int jobs = 0;                           // 0: one per hardware thread
  std::string subset = "all";             // all | fit | check
  std::string csv_out;                    // optional per-row results
  double max_mape_percent = 0;            // > 0: exit status 3 when the MAPE of all replayed rows is above
  bool progress = false;                  // the progress line even when stderr is not a terminal
  bool allow_oom = false;                 // replay rows whose plan the memory model says does not fit
  std::vector<std::string> overrides;     // --set KEY=VALUE on the template (the row's own keys win)
  std::string metric = "iteration_time";  // or an MFU of summary.json: mfu, mfu_6n, mfu_palm, mfu_nvidia
  bool fold = false;                      // --fold: every row folded where it can be
  bool no_fold = false;                   // --no-fold: every row replayed whole
};

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& options);
// Returns the process exit status: 0, or 3 when --max-mape is exceeded.
int validate_command(const ValidateOptions& options);

}  // namespace trainsim::cli
