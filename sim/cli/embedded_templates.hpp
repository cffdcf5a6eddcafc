#pragma once
// Scenario templates compiled into the binary (generated from
// scenarios/validation/*.yaml by cmake/embed_text_files.cmake), so
// `trainsim validate` works from any directory.
#include <string_view>
#include <vector>

namespace trainsim::cli {

struct EmbeddedFile {
  std::string_view path;  // relative to the source tree
  std::string_view text;
};

const std::vector<EmbeddedFile>& embedded_templates();

// scenarios/validation/vtrain-a100.yaml.
std::string_view vtrain_a100_template();

}  // namespace trainsim::cli
