// Fuzz target: the study reader (`trainsim sweep` / `compare` files), and,
// for studies of a few points, the expansion and check of every point.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "platforms/input_error.hpp"
#include "sim/study/study_file.hpp"
#include "sim/study/study_points.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto study = trainsim::sim::parse_study_text(text, "fuzz.yaml");
    std::size_t points = 1;
    for (const auto& axis : study.axes)
      points *= std::max<std::size_t>(1, std::min<std::size_t>(axis.values.size(), 17));
    // Each point is a whole scenario load: keep an input's run short.
    if (points <= 16)
      (void)trainsim::sim::prepare_points(study, {});
  } catch (const trainsim::platforms::InputError&) {
  }
  return 0;
}
