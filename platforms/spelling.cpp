#include "platforms/spelling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace trainsim::platforms {
namespace {

std::string normalised(std::string_view word) {
  std::string out;
  for (char c : word)
    out += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and
// swaps of two neighbours ("hiddne") each cost one.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> closest_word(std::string_view word, const std::vector<std::string_view>& known) {
  const std::string w = normalised(word);
  const std::size_t allowed = w.size() >= 10 ? 3 : w.size() >= 6 ? 2 : 1;
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (auto k : known) {
    const std::size_t distance = edit_distance(w, normalised(k));
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(k);
    }
  }
  if (best)
    return best;
  // A name cut short or run on ("tensor_model_parallel" for
  // "tensor_model_parallel_size"): the nearest in length that starts alike.
  std::size_t best_gap = 0;
  for (auto k : known) {
    const std::string n = normalised(k);
    const auto& shorter = n.size() < w.size() ? n : w;
    const auto& longer = n.size() < w.size() ? w : n;
    if (shorter.size() < 5 || longer.compare(0, shorter.size(), shorter) != 0)
      continue;
    if (!best || longer.size() - shorter.size() < best_gap) {
      best_gap = longer.size() - shorter.size();
      best = std::string(k);
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& known) {
  const auto best = closest_word(word, known);
  return best ? fmt::format(" (did you mean '{}'?)", *best) : std::string();
}

}  // namespace trainsim::platforms
