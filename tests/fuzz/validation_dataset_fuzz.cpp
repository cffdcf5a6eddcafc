// Fuzz target: the CSV reader of `trainsim validate` (vTrain's columns).
#include <cstddef>
#include <cstdint>
#include <string>

#include "platforms/input_error.hpp"
#include "sim/cli/validation_dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)trainsim::cli::parse_validation_dataset(text, "fuzz.csv");
  } catch (const trainsim::platforms::InputError&) {
  }
  return 0;
}
