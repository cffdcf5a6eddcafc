#pragma once
// What `run` and `collective` show while they simulate: a progress line
// (simulated time, tasks done / total, rate, time left) and, before an
// expensive replay, one note with its estimated time and memory and the
// cheaper choice. The replay only counts (sim/replay/replay_observer.hpp);
// the text is made here.
#include <string>
#include <string_view>

#include "sim/replay/replay_observer.hpp"
#include "sim/study/progress.hpp"

namespace trainsim::cli {

// Replays estimated to take longer than this (or to need more memory than
// kExpensiveMemory_bytes) get a note before they start.
inline constexpr double kExpensiveTime_s = 30;
inline constexpr double kExpensiveMemory_bytes = 8.0 * (1ULL << 30);

// The note for an expensive replay; "" for a cheap one. `cheaper` is how the
// user asks for fast collectives ("--set cluster.collectives.fidelity=fast").
std::string expensive_replay_note(const sim::ReplayCost& cost, std::string_view cheaper);

// "simulating: 412ms simulated, 12.3k/45.7k tasks (27%), 5.1k tasks/s, ~6s left".
std::string replay_progress_text(const sim::ReplayProgress& progress, const sim::ReplayCost* cost,
                                 double elapsed_s);

// An observer that prints the note above `line` and keeps `line` updated.
// `line` must outlive the replay.
sim::ReplayObserver observe_replay(sim::ProgressLine& line, std::string cheaper);

}  // namespace trainsim::cli
