#pragma once
// Reporters turn the typed records of a run and its analyses into files and
// text. Models never print; every output of trainsim is written here. The
// layout of each file is documented in docs/outputs.md.
#include <cstddef>
#include <iosfwd>
#include <string>

#include "analysis/report.hpp"
#include "analysis/run_context.hpp"
#include "analysis/timeline.hpp"

namespace trainsim::analysis {

// Version of the summary.json layout; bumped on any incompatible change.
// /2 added lost time by cause, critical path, utilization, links, memory and
// energy; every /1 key keeps its meaning. /3 added `gpu_groups` and lists
// `gpus` only up to kSummaryGpuListMax GPUs.
inline constexpr const char* kSummarySchema = "trainsim.summary/3";

// summary.json: inputs, headline figures and every analysis. Per GPU, the
// GPUs grouped by identical figures (`gpu_groups`, always) and, for runs of
// at most `gpu_list_max` GPUs, every GPU (`gpus`): at 16,384 GPUs the list
// alone made a 36 MB file, and per_gpu.csv holds every GPU anyway.
inline constexpr std::size_t kSummaryGpuListMax = 1024;
void write_summary_json(std::ostream& out, const RunContext& run, const Report& report,
                        std::size_t gpu_list_max = kSummaryGpuListMax);
// timeline.csv: one row per (task, GPU): gpu, stream, kind, name,
// micro_batch, stage, start_s, end_s, bytes, peer.
void write_timeline_csv(std::ostream& out, const RunContext& run, const Timeline& timeline);
// per_gpu.csv, per_stage.csv, links.csv, critical_path.csv.
void write_per_gpu_csv(std::ostream& out, const RunContext& run, const Report& report);
void write_per_stage_csv(std::ostream& out, const RunContext& run, const Report& report);
void write_links_csv(std::ostream& out, const Report& report);
void write_critical_path_csv(std::ostream& out, const RunContext& run, const Timeline& timeline,
                             const Report& report);
// trace.json: Chrome trace-event format (chrome://tracing, ui.perfetto.dev).
// How much of the run it holds: every GPU (`full`), or the GPUs of the first
// data-parallel replica (`replica`: every stage and TP rank of dp rank 0,
// with the whole critical path and the hottest links); `automatic` keeps
// every GPU unless the full trace would pass kTraceAutoMax_bytes (the few
// hundred MB Perfetto's UI opens) and the plan has data-parallel replicas.
enum class TraceDetail { automatic, full, replica };
inline constexpr double kTraceAutoMax_bytes = 200e6;
// The size of the full trace, estimated from the events it would hold.
double estimated_full_trace_bytes(const RunContext& run, const Timeline& timeline, const Report& report);
// `asked`, with `automatic` resolved for this run (full or replica).
TraceDetail resolved_trace_detail(TraceDetail asked, const RunContext& run, const Timeline& timeline,
                                  const Report& report);
void write_chrome_trace(std::ostream& out, const RunContext& run, const Timeline& timeline,
                        const Report& report, TraceDetail detail = TraceDetail::full);
// The aligned summary printed after a run, then the top causes of lost time.
void write_terminal_summary(std::ostream& out, const RunContext& run, const Report& report);
// The lines printed under the summary (after the files written) for a run
// of several iterations or seeds, with perturbations or failures.
void write_repeated_runs_summary(std::ostream& out, const RepeatedRuns& runs);

// SVG plots (standalone documents).
// Pipeline Gantt of the iteration: one row per GPU timeline (GPUs of a
// stage with identical timelines share a row marked xN; at most
// kGanttMaxRows rows), compute coloured by op kind, communication as a strip
// under it, idle time left blank, the time axis above and below.
inline constexpr int kGanttMaxRows = 64;
void write_gantt_svg(std::ostream& out, const RunContext& run, const Timeline& timeline,
                     const Report& report);
// Lost time per stage as stacked bars by cause.
void write_bubbles_svg(std::ostream& out, const RunContext& run, const Report& report);
// Memory over time: one line per stage (its first GPU), and the peaks.
void write_memory_svg(std::ostream& out, const RunContext& run, const Report& report);

// One self-contained HTML page: the summary, the three plots inline, the
// tables, and a link to `trace_file` (relative to the page).
void write_html_report(std::ostream& out, const RunContext& run, const Timeline& timeline,
                       const Report& report, const std::string& trace_file);

}  // namespace trainsim::analysis
