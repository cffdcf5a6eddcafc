#pragma once
// Chakra ET files: a varint length and a GlobalMetadata message, then each
// Node the same way (Chakra's protolib encodeMessage; ASTRA-sim's feeder
// reads exactly this). One file per rank, named `<prefix>.<rank>.et`.
#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "workloads/chakra/et_trace.hpp"

namespace trainsim::chakra {

// The most nodes one rank's file may hold: 4.2 million, about 570 MB as
// read (136 bytes a Node); a rank of trainsim's own 16,384-GPU export has
// a few hundred, PyTorch's traces of one iteration tens of thousands.
inline constexpr std::size_t kMaxTraceNodes = std::size_t{1} << 22;

// Reads the file through platforms' reader of binary inputs (a regular
// file, at most platforms::kMaxBinaryInputBytes, as much once decompressed,
// at most kMaxTraceNodes nodes). Throws platforms::InputError naming the
// file (and the message number) when it cannot be read or is not an ET file.
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
// The folder is listed one level deep with platforms::list_directory (at
// most platforms::kMaxDirectoryEntries entries); an entry named like a rank
// file must be a regular file once links are followed (a link loop is an
// error naming it). Throws platforms::InputError saying what was found
// instead (no files, several prefixes, a missing rank, a rank beyond the
// most a cluster has).
std::vector<RankFile> find_trace_files(const std::filesystem::path& where);

}  // namespace trainsim::chakra
