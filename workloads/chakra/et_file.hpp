#pragma once
// Chakra ET files: a varint length and a GlobalMetadata message, then each
// Node the same way (Chakra's protolib encodeMessage; ASTRA-sim's feeder
// reads exactly this). One file per rank, named `<prefix>.<rank>.et`.
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "workloads/chakra/et_trace.hpp"

namespace trainsim::chakra {

// Throws platforms::InputError naming the file (and the message number)
// when it cannot be read or is not an ET file.
Trace read_et_file(const std::filesystem::path& path);

// The bytes of an ET file, onto `out` (`trainsim export` hands them to
// the atomic writer, analysis/reporters/atomic_file.hpp).
void write_et(std::ostream& out, const Trace& trace);
// The same into a file, written in place (tests). Throws
// platforms::InputError when the file cannot be written.
void write_et_file(const std::filesystem::path& path, const Trace& trace);

// One rank's file of a trace.
struct RankFile {
  int rank = 0;
  std::filesystem::path path;
};

// The files of one trace, ranks 0..N-1 in order, from `where`: a folder
// holding `<prefix>.<rank>.et` files of one prefix, or a prefix
// (`dir/name` for dir/name.0.et, dir/name.1.et, ... as ASTRA-sim's
// --workload-configuration takes it), or one `.et` file (a one-rank trace).
// Throws platforms::InputError saying what was found instead (no files,
// several prefixes, a missing rank).
std::vector<RankFile> find_trace_files(const std::filesystem::path& where);

}  // namespace trainsim::chakra
