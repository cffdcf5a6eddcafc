#pragma once
// Reporters turn the typed records of a run into files and text. Models never
// print; every output of trainsim is written here.
#include <iosfwd>
#include <string>

#include "analysis/run_context.hpp"
#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"

namespace trainsim::analysis {

// Version of the summary.json layout; bumped on any incompatible change.
inline constexpr const char* kSummarySchema = "trainsim.summary/1";

// summary.json: inputs, headline figures, per-stage and per-GPU usage.
void write_summary_json(std::ostream& out, const RunContext& run, const Summary& summary);
// timeline.csv: one row per (task, GPU): gpu, stream, kind, name,
// micro_batch, stage, start_s, end_s, bytes, peer.
void write_timeline_csv(std::ostream& out, const RunContext& run, const Timeline& timeline);
// trace.json: Chrome trace-event format (chrome://tracing, ui.perfetto.dev):
// one process per node, one thread per GPU stream, complete events, and flow
// arrows from each pipeline send to its receive.
void write_chrome_trace(std::ostream& out, const RunContext& run, const Timeline& timeline);
// The aligned table printed after a run.
void write_terminal_summary(std::ostream& out, const RunContext& run, const Summary& summary);

}  // namespace trainsim::analysis
