#pragma once
// run.trainsim: what `trainsim report RUN_DIR` needs to regenerate every
// output of a run without simulating it again: the caller's metadata (JSON
// text: the scenario and how it was run), the timeline, and the size and
// fingerprint of the task graph. The graph itself is not stored: it is
// rebuilt from the scenario (building is deterministic and takes a fraction
// of the replay's time) and checked against the fingerprint, so the archive
// cannot fall behind new task fields. A compact binary file (native
// little-endian numbers, doubles bit-exact), so a regenerated report is
// byte-identical to the one the run wrote.
#include <cstdint>
#include <iosfwd>
#include <string>

#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

inline constexpr const char* kRunArchiveFile = "run.trainsim";

struct RunArchive {
  std::string metadata_json;
  std::uint64_t task_count = 0;
  std::uint64_t graph_fingerprint = 0;  // workloads::graph_fingerprint
  int gpu_count = 0;
  Timeline timeline;
};

void write_run_archive(std::ostream& out, const std::string& metadata_json, const workloads::TaskGraph& graph,
                       const Timeline& timeline);
// Throws std::runtime_error saying what is wrong with a file that is not a
// complete archive of this format version.
RunArchive read_run_archive(std::istream& in);

}  // namespace trainsim::analysis
