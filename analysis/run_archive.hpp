#pragma once
// run.trainsim: what `trainsim report RUN_DIR` needs to regenerate every
// output of a run without simulating it again: the caller's metadata (JSON
// text: the scenario and how it was run), the task graph and the timeline.
// A compact binary file (native little-endian numbers, doubles bit-exact), so
// a regenerated report is byte-identical to the one the run wrote.
#include <iosfwd>
#include <string>

#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

inline constexpr const char* kRunArchiveFile = "run.trainsim";

struct RunArchive {
  std::string metadata_json;
  workloads::TaskGraph graph;
  Timeline timeline;
};

void write_run_archive(std::ostream& out, const std::string& metadata_json, const workloads::TaskGraph& graph,
                       const Timeline& timeline);
// Throws std::runtime_error saying what is wrong with a file that is not a
// complete archive of this format version.
RunArchive read_run_archive(std::istream& in);

}  // namespace trainsim::analysis
