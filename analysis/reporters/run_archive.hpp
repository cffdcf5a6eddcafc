#pragma once
// run.trainsim: what `trainsim report RUN_DIR` needs to regenerate every
// output of a run without simulating it again: the run's metadata (JSON
// text: the scenario and how it was run, RunMetadata), the timeline, and the
// size and fingerprint of the task graph. The graph itself is not stored: it
// is rebuilt from the scenario (building is deterministic and takes a
// fraction of the replay's time) and checked against the fingerprint, so the
// archive cannot fall behind new task fields. A compact binary body (native
// little-endian numbers, doubles bit-exact, so a regenerated report is
// byte-identical to the one the run wrote), compressed with zstd (level 3:
// about 20x smaller; the 16,384-GPU run's 642 MB became ~30 MB):
//
//   magic (8) | version (u32) | zstd frame of the body | body size (u64) | FNV-1a 64 of all before
//   version 6: body = metadata | graph size | timeline | "END!"
//   version 7: body = metadata | graph size | fold summary | fold | timeline | "END!"
//   version 8: version 7 with the flows delta-coded (each against the one before)
//   version 9: version 8 with the task records delta-coded too
//   version 10: version 9 with the fingerprint by FingerprintHash::multiply_rotate
//
// Version 7 is a run the fold considered (docs/performance.md, "The fold"):
// its summary (summary.json's `fold`), and, when the replay folded and the
// timeline reads its records as images, the fold's images (the rotation's
// order m, its image of every task and flow endpoint, each recorded route's
// m images) with the records, flows and collective choices of each class
// once: the reader expands them as the run did (RecordList::expand), so the
// timeline reads as the run's, record for record, at 1/m of the bytes. Every
// other run writes version 6 (as before version 7 existed, byte for byte).
// A run the fold considered writes version 8 since 2026-12-07: version 7's
// content with each flow coded against the flow before it (a byte of flags
// for the times and bytes it repeats, the integer fields as varint
// differences), since a folded run's flows are ring steps that repeat most
// of their fields: scale-16k's 144 MB of flows become 36 MB, and zstd, which
// spent 12% of that run compressing them, a sixth of it (docs/performance.md,
// "Writers: numbers formatted once, flows coded as differences"). Since
// 2026-12-07 it writes version 9: the task records coded alike (a byte of
// flags for the times they repeat, with the stream in its high bits; task
// and GPU as varint differences; delta_rows.hpp): scale-16k's 15.6 MB of
// records become 2.9 MB, which zstd had spent more on than on the 36 MB of
// coded flows (docs/performance.md, "The archive's records coded as
// differences"). Since 2026-12-07 it writes version 10: version 9 with the
// graph's fingerprint hashed by one multiplication and rotation per value
// instead of FNV-1a byte by byte (0.56e9 -> ~0.1e9 instructions on
// scale-16k); `report` checks each archive with its version's hash
// (docs/performance.md, "The fingerprint per format version"). Versions 6
// to 10 are read.
//
// The reader checks the checksum before it decodes anything, refuses a body
// size over 1024 times the frame's (damage, or a decompression bomb), lets
// zstd check the frame, and checks every count against the bytes left
// before it allocates, so a corrupt or truncated file is refused with a
// reason, never read as other figures.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/balance_outcome.hpp"
#include "analysis/repeated_runs.hpp"
#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::analysis {

inline constexpr const char* kRunArchiveFile = "run.trainsim";
// The format versions written and read (above).
inline constexpr std::uint32_t kRunArchiveWholeVersion = 6;
inline constexpr std::uint32_t kRunArchiveFoldVersion = 10;
inline constexpr std::uint32_t kRunArchiveCodedRecordsFoldVersion = 9;  // read, no longer written
inline constexpr std::uint32_t kRunArchiveCodedFlowsFoldVersion = 8;    // read, no longer written
inline constexpr std::uint32_t kRunArchiveRawFlowsFoldVersion = 7;      // read, no longer written

struct RunArchive {
  std::string metadata_json;
  std::uint64_t task_count = 0;
  std::uint64_t graph_fingerprint = 0;  // workloads::graph_fingerprint by fingerprint_hash
  workloads::FingerprintHash fingerprint_hash = workloads::FingerprintHash::fnv1a;
  int gpu_count = 0;
  Timeline timeline;
  FoldSummary fold;  // not considered in a version 6 archive
};

// The hash of the graph's fingerprint that an archive of format `version`
// stores: FNV-1a up to version 9 (version 6, every run the fold did not
// consider, byte for byte as before), multiply-rotate from version 10.
workloads::FingerprintHash run_archive_fingerprint_hash(std::uint32_t version);

// `fold`: the run's summary of the fold (Summary::fold).
void write_run_archive(std::ostream& out, const std::string& metadata_json, const workloads::TaskGraph& graph,
                       const Timeline& timeline, const FoldSummary& fold = {});
// Throws std::runtime_error saying what is wrong with a file that is not a
// complete, intact archive of a version this trainsim reads.
RunArchive read_run_archive(std::istream& in);
RunArchive parse_run_archive(std::string_view bytes);
// The steps of parse_run_archive: the checked, decompressed body of a file
// (and its format version), then its decoder (the fuzz target calls the
// decoder alone: mutations of the compressed file rarely survive zstd's own
// checks).
std::string run_archive_body(std::string_view bytes, std::uint32_t* version = nullptr);
RunArchive decode_run_archive_body(std::string_view body, std::uint32_t version);
// A complete archive of format `version` around `body` (for the tests: a
// body edited as a trainsim with another graph would write it).
std::string seal_run_archive(std::string_view body, std::uint32_t version);
// Rewrites the checksum at the end of `bytes` (8 bytes or more) to match what
// precedes it. For the fuzz target and the tests only: a mutated body then
// reaches the decoder, whose own checks (counts against the bytes left,
// ranges) must refuse it, instead of stopping at the checksum.
void reseal_run_archive(std::string& bytes);

// How the run was made (the archive's metadata, schema trainsim.run/1).
struct RunMetadata {
  std::string trainsim_version;  // of the trainsim that saved it
  std::string scenario_file;
  std::vector<std::string> overrides;
  std::string scenario_yaml;
  std::optional<BalanceOutcome> balance;  // `run --balance auto`
  std::optional<RepeatedRuns> repeats;    // --iterations, --seeds, perturbations, failures
};
// The JSON text of `metadata` with this trainsim's version.
std::string run_metadata_json(const RunMetadata& metadata);
// Throws std::runtime_error naming the key that is missing or of the wrong type.
RunMetadata run_metadata_from_json(std::string_view text);

}  // namespace trainsim::analysis
