#include "workloads/layer_split.hpp"

#include <fmt/format.h>

#include <cctype>

namespace trainsim::workloads {
namespace {

constexpr int kMaxLayoutStages = 1 << 20;

// Megatron's parse_str_to_list: commas dropped, "(...)*n" then "x*n"
// unrolled, stages split at '|'. Returns the stages, or an error text.
struct ParsedLayout {
  std::vector<std::string> stages;
  std::string error;
};

ParsedLayout parse_layout(const std::string& text) {
  std::string s;
  for (char c : text)
    if (c != ',' && !std::isspace(static_cast<unsigned char>(c)))
      s += c;
  // One pass of each of Megatron's two patterns, as re.sub does them: groups
  // first (not nested), then single characters.
  auto unroll = [](const std::string& in, bool groups, std::string& error) {
    std::string out;
    std::size_t i = 0;
    while (i < in.size()) {
      std::string unit;
      std::size_t next = i + 1;
      if (groups && in[i] == '(') {
        const auto close = in.find(')', i);
        if (close == std::string::npos) {
          error = fmt::format("'(' at character {} is never closed", i + 1);
          return out;
        }
        unit = in.substr(i + 1, close - i - 1);
        next = close + 1;
      } else {
        unit = in.substr(i, 1);
      }
      if (next < in.size() && in[next] == '*' && (!groups || in[i] == '(')) {
        std::size_t digits = next + 1;
        while (digits < in.size() && std::isdigit(static_cast<unsigned char>(in[digits])))
          ++digits;
        if (digits == next + 1) {
          error = fmt::format("'*' at character {} is not followed by a count", next + 1);
          return out;
        }
        const auto count_text = in.substr(next + 1, digits - next - 1);
        if (count_text.size() > 7) {
          error = fmt::format("repeat count {} is too large", count_text);
          return out;
        }
        const int count = std::stoi(count_text);
        if (static_cast<double>(count) * static_cast<double>(unit.size()) + out.size() >
            64.0 * kMaxLayoutStages) {
          error = "the layout unrolls to more than 64 million characters";
          return out;
        }
        for (int k = 0; k < count; ++k)
          out += unit;
        i = digits;
        continue;
      }
      out += groups && in[i] == '(' ? "(" + unit + ")" : unit;
      i = next;
    }
    return out;
  };
  ParsedLayout parsed;
  s = unroll(s, true, parsed.error);
  if (!parsed.error.empty())
    return parsed;
  s = unroll(s, false, parsed.error);
  if (!parsed.error.empty())
    return parsed;
  std::string stage;
  for (char c : s) {
    if (c == '|') {
      parsed.stages.push_back(stage);
      stage.clear();
      if (parsed.stages.size() > static_cast<std::size_t>(kMaxLayoutStages)) {
        parsed.error = "more than a million virtual stages";
        return parsed;
      }
    } else {
      stage += c;
    }
  }
  parsed.stages.push_back(stage);
  return parsed;
}

}  // namespace

int layout_stage_count(const std::string& layout) {
  const ParsedLayout parsed = parse_layout(layout);
  return parsed.error.empty() ? static_cast<int>(parsed.stages.size()) : 0;
}

LayerSplit split_layers(const LayerSplitRequest& r, int layers, int pp, int v) {
  LayerSplit out;
  auto problem = [&](std::string key, std::string message) {
    out.problems.push_back({"plan." + key, std::move(message)});
  };
  if (pp <= 0 || layers <= 0)
    return out;
  const bool uneven_ends = r.first_stage_layers || r.last_stage_layers;
  const bool accounted = r.embedding_in_split || r.loss_in_split;
  if (r.pipeline_layout && (uneven_ends || accounted)) {
    problem("pipeline_layout",
            "given with first_stage_layers / last_stage_layers / embedding_in_split / loss_in_split; "
            "expected the layout alone (it says every stage's layers), as Megatron-LM's "
            "--pipeline-model-parallel-layout");
    return out;
  }
  if (uneven_ends && accounted) {
    problem(r.first_stage_layers ? "first_stage_layers" : "last_stage_layers",
            "given with embedding_in_split / loss_in_split; expected one or the other (Megatron-LM: "
            "\"does not support standalone embedding stage and standalone loss stage with uneven pp\")");
    return out;
  }

  if (r.pipeline_layout) {
    const ParsedLayout parsed = parse_layout(*r.pipeline_layout);
    if (!parsed.error.empty()) {
      problem("pipeline_layout", fmt::format("\"{}\": {}; expected stages of E, t, L separated by '|', "
                                             "e.g. \"Et|(tt|)*62,tL\"",
                                             *r.pipeline_layout, parsed.error));
      return out;
    }
    const int stages = static_cast<int>(parsed.stages.size());
    if (v > 0 && stages != pp * v) {
      problem(
          "pipeline_layout",
          fmt::format("\"{}\" lists {} virtual stages, but pp x virtual_stages = {} x {} = {}; expected {} "
                      "stages separated by '|' (or leave virtual_stages out: stages / pp)",
                      *r.pipeline_layout, stages, pp, v, pp * v, pp * v));
      return out;
    }
    if (stages % pp != 0) {
      problem("pipeline_layout", fmt::format("\"{}\" lists {} virtual stages, not a multiple of pp = {}; "
                                             "expected pp x virtual_stages stages separated by '|'",
                                             *r.pipeline_layout, stages, pp));
      return out;
    }
    int total = 0;
    std::string errors;
    for (int vs = 0; vs < stages; ++vs) {
      const std::string& stage = parsed.stages[static_cast<std::size_t>(vs)];
      int t = 0;
      for (std::size_t c = 0; c < stage.size(); ++c) {
        const char ch = stage[c];
        if (ch == 't') {
          ++t;
        } else if (ch == 'E') {
          if (vs != 0 || c != 0)
            errors += fmt::format(
                "; 'E' in virtual stage {} (trainsim puts the embedding first in virtual "
                "stage 0, as Megatron's layout requires it first)",
                vs);
        } else if (ch == 'L') {
          if (vs != stages - 1 || c + 1 != stage.size())
            errors +=
                fmt::format("; 'L' in virtual stage {} (the loss is last in the last virtual stage)", vs);
        } else if (ch == 'm') {
          errors += "; 'm' (a multi-token-prediction layer), which trainsim does not model";
        } else {
          errors += fmt::format("; '{}' is not a layer (known: E, t, L)", ch);
        }
      }
      total += t;
      out.stage_layers.push_back(t);
    }
    const std::string& first = parsed.stages.front();
    const std::string& last = parsed.stages.back();
    if (first.empty() || first.front() != 'E')
      errors += "; the first virtual stage does not start with 'E' (the embedding)";
    if (last.empty() || last.back() != 'L')
      errors += "; the last virtual stage does not end with 'L' (the loss)";
    if (total != layers)
      errors += fmt::format("; it holds {} transformer layers ('t'), but model.layers is {}", total, layers);
    if (!errors.empty()) {
      out.stage_layers.clear();
      problem("pipeline_layout", fmt::format("\"{}\"{}; expected E first, L last, one 't' per layer",
                                             *r.pipeline_layout, errors));
    }
    return out;
  }

  const int chunks = std::max(v, 1);
  const int stages = pp * chunks;
  if (accounted) {
    const int units = layers + (r.embedding_in_split ? 1 : 0) + (r.loss_in_split ? 1 : 0);
    const std::string what = r.embedding_in_split && r.loss_in_split ? "layers + 2 (embedding and loss)"
                             : r.embedding_in_split                  ? "layers + 1 (the embedding)"
                                                                     : "layers + 1 (the loss)";
    const std::string key = r.embedding_in_split ? "embedding_in_split" : "loss_in_split";
    if (units % stages != 0) {
      problem(key, fmt::format("{} = {} is not divisible by {} = {}; expected them to split evenly "
                               "(Megatron-LM's rule)",
                               what, units, chunks > 1 ? "pp x virtual_stages" : "pp", stages));
      return out;
    }
    const int each = units / stages;
    out.stage_layers.assign(static_cast<std::size_t>(stages), each);
    if (r.embedding_in_split)
      --out.stage_layers.front();
    if (r.loss_in_split)
      --out.stage_layers.back();
    if (out.stage_layers.front() < 0 || out.stage_layers.back() < 0) {
      out.stage_layers.clear();
      problem(key,
              "leaves a virtual stage with fewer than 0 layers; expected more layers than virtual stages");
    }
    return out;
  }

  // first_stage_layers / last_stage_layers.
  int rest = layers, ranks_left = pp;
  const auto check_end = [&](const std::optional<int>& value, const char* key, const char* which) {
    if (!value)
      return true;
    if (*value < 0 || *value > layers) {
      problem(key, fmt::format("{}; expected 0 to model.layers = {} layers on the {} pipeline rank", *value,
                               layers, which));
      return false;
    }
    if (*value % chunks != 0) {
      problem(key, fmt::format("{} is not divisible by virtual_stages = {}; expected the {} rank's layers to "
                               "split evenly over its chunks (Megatron-LM's rule)",
                               *value, chunks, which));
      return false;
    }
    rest -= *value;
    --ranks_left;
    return true;
  };
  if (pp == 1) {
    problem(r.first_stage_layers ? "first_stage_layers" : "last_stage_layers",
            "given with pp = 1, where one rank holds every layer; expected pp >= 2");
    return out;
  }
  const bool ok_first = check_end(r.first_stage_layers, "first_stage_layers", "first");
  const bool ok_last = check_end(r.last_stage_layers, "last_stage_layers", "last");
  if (!ok_first || !ok_last)
    return out;
  if (rest < 0) {
    problem(r.last_stage_layers ? "last_stage_layers" : "first_stage_layers",
            fmt::format("first and last ranks take {} layers, more than model.layers = {}", layers - rest,
                        layers));
    return out;
  }
  int per_rank = 0;
  if (ranks_left > 0) {
    if (rest % ranks_left != 0 || (rest / ranks_left) % chunks != 0) {
      problem(
          r.first_stage_layers ? "first_stage_layers" : "last_stage_layers",
          fmt::format("leaves {} layers for the other {} rank{}, not {}divisible; expected the rest to split "
                      "evenly (Megatron-LM's rule)",
                      rest, ranks_left, ranks_left == 1 ? "" : "s",
                      chunks > 1 ? fmt::format("{} x virtual_stages = {} ", ranks_left, ranks_left * chunks)
                                 : std::string()));
      return out;
    }
    per_rank = rest / ranks_left;
  } else if (rest != 0) {
    problem("last_stage_layers", fmt::format("first and last ranks take {} layers, but model.layers is {}; "
                                             "expected them to add up with pp = {}",
                                             layers - rest, layers, pp));
    return out;
  }
  std::vector<int> rank_layers(static_cast<std::size_t>(pp), per_rank);
  if (r.first_stage_layers)
    rank_layers.front() = *r.first_stage_layers;
  if (r.last_stage_layers)
    rank_layers.back() = *r.last_stage_layers;
  // Virtual stage vs sits on rank vs % pp (Megatron's looped placement).
  for (int vs = 0; vs < stages; ++vs)
    out.stage_layers.push_back(rank_layers[static_cast<std::size_t>(vs % pp)] / chunks);
  return out;
}

}  // namespace trainsim::workloads
