#pragma once
// The one step that writes every output file of a run (the list is
// docs/outputs.md) from its typed records: what `trainsim run` (plain, with
// --iterations / --seeds, with --balance auto, as a sweep or plan point) and
// `trainsim report` all call. Each file is written once, atomically, and the
// folder is completed last (run_folder.hpp).
#include <optional>
#include <string>
#include <vector>

#include "analysis/report.hpp"
#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/run_archive.hpp"
#include "analysis/reporters/run_folder.hpp"
#include "analysis/run_context.hpp"
#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"

namespace trainsim::analysis {

struct RunOutputs {
  const RunContext& run;
  const Timeline& timeline;
  // The summary the replay already computed for `timeline` (null: computed here).
  const Summary* summary = nullptr;
  // What the replay computed along with `summary` (analysis/report.hpp).
  ComputedWithSummary computed{};
  // The fold's summary when the summary is computed here (`trainsim report`:
  // the archive's; null: the fold was not considered).
  const FoldSummary* fold = nullptr;
  // Several iterations or seeds, perturbations, failures (summary.json's last blocks).
  std::optional<RepeatedRuns> repeats;
  // run.trainsim's metadata: written when given; `trainsim report` keeps the
  // archive it read instead (`keep_archive`).
  const RunMetadata* archive = nullptr;
  bool keep_archive = false;
  bool html = false;  // report.html
  // How much of the run trace.json holds (reporters.hpp).
  TraceDetail trace = TraceDetail::automatic;
  // Folders of the run that another process completed (`even/`).
  std::vector<std::string> kept_folders{};
};

struct WrittenRun {
  Report report;
  // What the run's folder holds, in the order the terminal lists it: the
  // outputs, then run.trainsim, then the kept folders (with a '/').
  std::vector<std::string> files;
  // What trace.json holds (`automatic` resolved).
  TraceDetail trace = TraceDetail::full;
};

// Writes every file into `folder` and completes it.
WrittenRun write_run_outputs(RunFolder& folder, const RunOutputs& outputs);

}  // namespace trainsim::analysis
