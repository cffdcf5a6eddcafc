#pragma once
// "Did you mean": the closest known word to a misspelt one, for the errors
// of the YAML reader (keys and values), the presets and the CLI.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::platforms {

// The known word nearest to `word` by edit distance (case, '-' and '_'
// ignored), when it is near enough to be a slip: at most one edit in a short
// word, two from 6 letters, three from 10; ties go to the first listed.
// Failing that, a known word that starts with it or that it starts with
// (at least 5 letters in common).
std::optional<std::string> closest_word(std::string_view word, const std::vector<std::string_view>& known);

// " (did you mean 'hidden'?)", or "" when nothing is near.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& known);

}  // namespace trainsim::platforms
