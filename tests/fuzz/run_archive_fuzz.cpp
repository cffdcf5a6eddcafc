// Fuzz target: the run archive reader (run.trainsim) and its metadata. A
// damaged archive must be refused with std::runtime_error (the CLI reports it
// as bad input), never read as other figures, and never allocate more than
// the file can hold (the body decoder: the bytes it is given; the compressed
// file: at most 1024 times its frame). Each input is read twice: as it is, and with its checksum
// made to match, so that mutations of the body reach the decoder.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "analysis/reporters/run_archive.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto archive = trainsim::analysis::parse_run_archive(bytes);
    (void)trainsim::analysis::run_metadata_from_json(archive.metadata_json);
  } catch (const std::runtime_error&) {
  }
  // The same bytes with their checksum made to match: the mutation reaches the
  // decoder, whose own checks must hold (the checksum keeps it out above).
  std::string resealed(bytes);
  trainsim::analysis::reseal_run_archive(resealed);
  try {
    const auto archive = trainsim::analysis::parse_run_archive(resealed);
    (void)trainsim::analysis::run_metadata_from_json(archive.metadata_json);
  } catch (const std::runtime_error&) {
  }
  // The body decoder on its own, as each format version: its counts and
  // ranges must hold on any bytes.
  for (const auto version :
       {trainsim::analysis::kRunArchiveWholeVersion, trainsim::analysis::kRunArchiveRawFlowsFoldVersion,
        trainsim::analysis::kRunArchiveCodedFlowsFoldVersion,
        trainsim::analysis::kRunArchiveCodedRecordsFoldVersion, trainsim::analysis::kRunArchiveFoldVersion}) {
    try {
      const auto archive = trainsim::analysis::decode_run_archive_body(bytes, version);
      (void)trainsim::analysis::run_metadata_from_json(archive.metadata_json);
    } catch (const std::runtime_error&) {
    }
  }
  // The metadata reader on its own.
  try {
    (void)trainsim::analysis::run_metadata_from_json(bytes);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
