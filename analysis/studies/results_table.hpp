#pragma once
// The results of a study (a sweep, a comparison, later a plan search): one
// row per point with the point's parameters and every scalar figure of its
// summary.json, written as results.csv and results.json. Pure data in, text
// out, so shards can be merged into exactly the file one run would write.
//
// Column order, fixed so that outputs do not depend on the number of worker
// processes or on how a study was sharded:
//   point, status, <parameters in study order>,
//   <figures, in order of first appearance over the rows sorted by point>,
//   exit_status, reason
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainsim::analysis {

// Version of the results.json layout; bumped on any incompatible change.
inline constexpr const char* kResultsSchema = "trainsim.results/1";

inline constexpr const char* kStatusOk = "ok";
inline constexpr const char* kStatusFailed = "failed";    // the simulation of the point failed
inline constexpr const char* kStatusDropped = "dropped";  // filtered out before running (reason says why)

struct ResultRow {
  std::string point;  // zero-padded index, also the folder name under points/
  std::string status;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // swept key -> value
  nlohmann::ordered_json figures = nlohmann::ordered_json::object();     // flattened summary figures
  std::optional<int> exit_status;                                        // failed points
  std::string reason;                                                    // why a point was dropped or failed
};

struct ShardInfo {
  int index = 0;
  int count = 1;
};

struct ResultsDocument {
  // name, file, id (fingerprint of every point), points (count over all
  // shards), parameters (column names), plots (specs, for merge to draw).
  nlohmann::ordered_json study = nlohmann::ordered_json::object();
  std::optional<ShardInfo> shard;  // set for one shard of a study
  std::vector<ResultRow> rows;     // sorted by point
};

// The most points a study has (sim/study's kMaxStudyPoints, which is
// checked to equal it); a results.json claiming more is not one.
inline constexpr std::size_t kMaxResultPoints = 1'000'000;

// Thrown for a results.json that is not one (merge reports each problem with
// the file): every field that is missing, of the wrong type or out of range,
// named by its path ("rows[3].status: ...").
class ResultsFormatError : public std::invalid_argument {
 public:
  explicit ResultsFormatError(const std::string& problem);
  explicit ResultsFormatError(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// Every scalar of a summary.json, nested objects flattened with dots
// ("plan.dp", "cluster.gpus"). Arrays (per-stage, per-GPU records) stay in the
// point's own summary.json, and so do the schema and version stamps. Adds
// tokens_per_s_per_gpu (tokens_per_s / cluster.gpus) when the summary has
// both and not already that figure: the per-GPU throughput scaling studies
// plot.
nlohmann::ordered_json flatten_summary(const nlohmann::ordered_json& summary);

// Parameter values are written as JSON numbers when the YAML text is one
// ("16", "0.5"), else as text ("auto", "400Gbps", "1f1b").
nlohmann::ordered_json parameter_value(const std::string& yaml_scalar);

std::vector<std::string> result_columns(const ResultsDocument& doc);
// The value of `column` in `row` (null when the row has none).
nlohmann::ordered_json cell(const ResultRow& row, const std::string& column);

void write_results_csv(std::ostream& out, const ResultsDocument& doc);
void write_results_json(std::ostream& out, const ResultsDocument& doc);
// Reads what write_results_json wrote, strictly: the schema stamp, the
// study header (name, file, id, points, parameters, plots, an optional
// description), the optional shard (0 <= index < count <= kMaxResultPoints),
// the columns, and rows whose point is a number below the study's points,
// whose status is ok, failed or dropped, whose exit_status is an integer and
// reason a text, and whose other cells are finite numbers, texts, booleans or
// null; an unknown key at the top, in the study or in a plot is refused.
// Throws ResultsFormatError with every problem found (at most
// platforms::kMaxKeptProblems).
ResultsDocument parse_results_json(const std::string& text);
ResultsDocument read_results_json(std::istream& in);

// Sorts rows by point (numerically).
void sort_rows(std::vector<ResultRow>& rows);

}  // namespace trainsim::analysis
