// Fuzz target: the run archive reader (run.trainsim) and its metadata. A
// damaged archive must be refused with std::runtime_error (the CLI reports it
// as bad input), never read as other figures, and never allocate more than
// the file holds.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "analysis/reporters/run_archive.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto archive = trainsim::analysis::parse_run_archive(bytes);
    (void)trainsim::analysis::run_metadata_from_json(archive.metadata_json);
  } catch (const std::runtime_error&) {
  }
  // The metadata reader on its own (the checksum keeps mutations out above).
  try {
    (void)trainsim::analysis::run_metadata_from_json(bytes);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
