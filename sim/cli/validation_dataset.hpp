#pragma once
// Measured iteration times in vTrain's CSV format (ground_truth_multi.csv and
// ground_truth_single.csv, ../shared/data/README.md): one training setup and
// its measured iteration time per row. trainsim adds two things: lines that
// start with '#' are comments (fixtures keep their provenance there; vTrain's
// header "# GPUs,..." is recognised as the header), and an
// optional `set` column says whether a row calibrated the cost model (`fit`)
// or only checks it (`check`), and an optional `context parallelism` column
// (default 1; NeMo's published H100 rows split sequences over 2 GPUs) gives
// plan.context_parallel, an optional `virtual stages` column the model
// chunks per GPU (>= 2: interleaved_1f1b with that many; 1: 1f1b), and an
// optional `MFU (%)` column the measured MFU (`trainsim validate --metric`).
#include <string>
#include <vector>

namespace trainsim::cli {

struct ValidationRow {
  int line = 0;                   // 1-based line in the file, for messages
  std::string set;                // "fit", "check" or "" when the file has no set column
  double parameters_billion = 0;  // 0 when the file has no such column
  int gpus = 0;
  int global_batch = 0;
  int micro_batch = 0;
  int hidden = 0;
  int heads = 0;
  int layers = 0;
  int seq_len = 0;
  int tp = 0;
  int dp = 0;
  int pp = 0;
  int cp = 0;              // 0 when the file has no such column (the template's value stands)
  int virtual_stages = 0;  // likewise
  double measured_ms = 0;
  double measured_mfu_percent = 0;  // 0 when the file has no `MFU (%)` column
};

// Reads the file; throws platforms::InputError naming file:line, the column and the
// bad value for every problem found (unknown or missing columns, non-numbers,
// tp x dp x pp x cp different from the GPU count, a `set` other than fit/check).
std::vector<ValidationRow> read_validation_dataset(const std::string& path);
std::vector<ValidationRow> parse_validation_dataset(const std::string& text, const std::string& file);

}  // namespace trainsim::cli
