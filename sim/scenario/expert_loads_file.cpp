#include "sim/scenario/expert_loads_file.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"

namespace trainsim::scenario {
namespace {

std::string trimmed(std::string_view s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos)
    return "";
  const auto b = s.find_last_not_of(" \t\r");
  return std::string(s.substr(a, b - a + 1));
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string f;
  while (std::getline(in, f, ','))
    out.push_back(trimmed(f));
  if (!line.empty() && line.back() == ',')
    out.push_back("");
  return out;
}

std::optional<long long> whole(const std::string& s) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    return std::nullopt;
  return v;
}

std::optional<double> number(const std::string& s) {
  if (s.empty())
    return std::nullopt;
  std::size_t used = 0;
  try {
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v))
      return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

ExpertLoadsFile read_expert_loads_file(const std::string& path, int experts) {
  ExpertLoadsFile out;
  std::string text;
  try {
    text = platforms::read_input_file(path, "expert loads file", platforms::kMaxTableInputBytes);
  } catch (const platforms::InputError& e) {
    out.problems = e.problems();
    return out;
  }
  const std::string name = path;
  auto problem = [&](int line, const std::string& what) {
    if (out.problems.size() < 20)
      out.problems.push_back(fmt::format("{}:{}: {}", name, line, what));
  };
  // layer (-1: all) -> expert -> (tokens, line)
  std::map<int, std::map<int, double>> table;
  std::map<int, int> first_line;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  bool header = false;
  while (std::getline(in, raw)) {
    ++line;
    const std::string content = trimmed(raw.substr(0, raw.find('#')));
    if (content.empty())
      continue;
    const auto f = fields_of(content);
    if (!header) {
      if (f != std::vector<std::string>{"layer", "expert", "tokens"}) {
        problem(line, fmt::format("the header is '{}'; expected 'layer,expert,tokens' (a measured "
                                  "tokens-per-expert table, docs/moe.md)",
                                  content));
        return out;
      }
      header = true;
      continue;
    }
    if (f.size() != 3) {
      problem(line, fmt::format("'{}' has {} field{}; expected 3: layer,expert,tokens", content, f.size(),
                                f.size() == 1 ? "" : "s"));
      continue;
    }
    int layer = -1;
    if (f[0] != "all") {
      const auto v = whole(f[0]);
      if (!v || *v < 0 || *v > (1LL << 30)) {
        problem(line, fmt::format("layer '{}' is not a layer index; expected an integer >= 0 (a model "
                                  "layer, 0-based) or all",
                                  f[0]));
        continue;
      }
      layer = static_cast<int>(*v);
    }
    const auto expert = whole(f[1]);
    if (!expert || *expert < 0 || *expert >= experts) {
      problem(line,
              fmt::format("expert '{}' is not an expert of this model; expected an integer from 0 to {} "
                          "(model.moe.experts = {})",
                          f[1], experts - 1, experts));
      continue;
    }
    const auto tokens = number(f[2]);
    if (!tokens || *tokens < 0) {
      problem(line, fmt::format("tokens '{}' is not a count; expected a number >= 0", f[2]));
      continue;
    }
    auto& row = table[layer];
    if (row.count(static_cast<int>(*expert)) != 0) {
      problem(line, fmt::format("layer {}, expert {} is given twice (first on line {})", f[0], *expert,
                                first_line[layer]));
      continue;
    }
    if (row.empty())
      first_line[layer] = line;
    row[static_cast<int>(*expert)] = *tokens;
  }
  if (!header) {
    problem(line, "no header; expected 'layer,expert,tokens' then one row per layer and expert");
    return out;
  }
  if (table.empty())
    problem(line, "no rows; expected one row per layer and expert after the header");
  for (const auto& [layer, row] : table) {
    const std::string which = layer < 0 ? "all" : std::to_string(layer);
    if (static_cast<int>(row.size()) != experts) {
      std::string missing;
      for (int e = 0, shown = 0; e < experts && shown < 8; ++e)
        if (row.count(e) == 0) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(e);
          ++shown;
        }
      problem(first_line[layer],
              fmt::format("layer {} lists {} of the {} experts (missing: {}{}); expected every "
                          "expert once",
                          which, row.size(), experts, missing,
                          experts - static_cast<int>(row.size()) > 8 ? ", ..." : ""));
      continue;
    }
    double sum = 0;
    workloads::MeasuredLayerLoads loads{.layer = layer, .tokens = {}};
    for (const auto& [e, t] : row) {
      loads.tokens.push_back(t);
      sum += t;
    }
    if (sum <= 0) {
      problem(first_line[layer], fmt::format("layer {} has no tokens at all; expected some expert to receive "
                                             "tokens",
                                             which));
      continue;
    }
    out.layers.push_back(std::move(loads));
  }
  return out;
}

}  // namespace trainsim::scenario
