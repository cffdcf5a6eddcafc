#include "sim/scenario/json_schema.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "platforms/names.hpp"
#include "platforms/units.hpp"
#include "sim/scenario/scenario_keys.hpp"

namespace trainsim::scenario {
namespace {

using nlohmann::ordered_json;
using platforms::KeySpec;
using platforms::KeyTable;
using T = platforms::ValueType;

std::string regex_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}/").find(c) != std::string_view::npos)
      out += '\\';
    out += c;
  }
  return out;
}

// What platforms/units.hpp parses: a non-negative number, optional spaces,
// one of the quantity's units.
ordered_json quantity_def(units::Quantity q, std::string_view what, std::string_view example) {
  std::string alternatives;
  for (auto s : units::unit_suffixes(q))
    alternatives.append(alternatives.empty() ? "" : "|").append(regex_escape(s));
  return {{"type", "string"},
          {"description", fmt::format("{} with its unit, e.g. {}", what, example)},
          {"pattern", fmt::format(R"(^ *(\d+\.?\d*|\.\d+)([eE][+-]?\d+)? *({}) *$)", alternatives)}};
}

std::string_view def_of(T type) {
  switch (type) {
    case T::bytes:
      return "bytes";
    case T::bandwidth:
      return "bandwidth";
    case T::duration:
      return "duration";
    case T::flop_rate:
      return "flop_rate";
    case T::power:
      return "power";
    default:
      return "";
  }
}

// A word whatever its case: [aA]100-80[gG][bB].
std::string any_case_pattern(const std::vector<std::string_view>& words) {
  std::string alternatives;
  for (auto w : words) {
    std::string p;
    for (char c : w) {
      if (std::isalpha(static_cast<unsigned char>(c)))
        p += fmt::format("[{}{}]", static_cast<char>(std::tolower(c)), static_cast<char>(std::toupper(c)));
      else
        p += regex_escape(std::string_view(&c, 1));
    }
    alternatives.append(alternatives.empty() ? "" : "|").append(p);
  }
  return std::string("^(").append(alternatives).append(")$");
}

void add_range(ordered_json& j, const KeySpec& k) {
  if (std::isfinite(k.min))
    j["minimum"] = k.min;
  if (std::isfinite(k.max))
    j["maximum"] = k.max;
}

class Generator {
 public:
  ordered_json table(const KeyTable& t, const std::vector<std::string_view>& leave_out = {}) {
    ordered_json j = {{"type", "object"}, {"description", std::string(t.name)}};
    ordered_json properties = ordered_json::object();
    ordered_json required = ordered_json::array();
    for (const auto& k : t.keys) {
      if (std::find(leave_out.begin(), leave_out.end(), k.name) != leave_out.end())
        continue;
      properties[std::string(k.name)] = value(k);
      if (k.required)
        required.push_back(k.name);
    }
    j["properties"] = std::move(properties);
    if (!required.empty())
      j["required"] = std::move(required);
    j["additionalProperties"] = false;
    return j;
  }

 private:
  ordered_json value(const KeySpec& k) {
    ordered_json j = base(k);
    j["description"] = std::string(k.doc);
    return j;
  }

  ordered_json base(const KeySpec& k) {
    switch (k.type) {
      case T::text:
        return {{"type", "string"}};
      case T::label:
        return {{"type", "string"}, {"pattern", std::string(platforms::name_pattern())}};
      case T::choice: {
        // YAML reads an unquoted true / false as a boolean (plan.tp_comm_overlap:
        // false, true or torch_async): such a word is accepted both ways.
        ordered_json words = ordered_json::array();
        for (auto w : k.words) {
          if (w == "true" || w == "false")
            words.push_back(w == "true");
          words.push_back(w);
        }
        ordered_json j = {{"enum", words}};
        if (k.any_case)
          j = {{"anyOf", {j, {{"type", "string"}, {"pattern", any_case_pattern(k.words)}}}}};
        if (k.fields != nullptr)
          j = {{"anyOf", {j, table(*k.fields)}}};
        return j;
      }
      case T::integer:
      case T::number: {
        ordered_json j = {{"type", k.type == T::integer ? "integer" : "number"}};
        add_range(j, k);
        if (!k.words.empty()) {
          ordered_json words = ordered_json::array();
          for (auto w : k.words)
            words.push_back(w);
          j = {{"anyOf", {j, {{"enum", words}}}}};
        }
        return j;
      }
      case T::boolean:
        return {{"type", "boolean"}};
      case T::bytes:
      case T::bandwidth:
      case T::duration:
      case T::flop_rate:
      case T::power:
        return {{"$ref", fmt::format("#/$defs/{}", def_of(k.type))}};
      case T::integer_list: {
        ordered_json item = {{"type", "integer"}};
        add_range(item, k);
        ordered_json j = {{"type", "array"}, {"items", item}, {"minItems", 1}};
        if (k.one_or_list)
          j = {{"anyOf", {item, j}}};
        return j;
      }
      case T::map:
        return table(*k.fields);
      case T::map_list:
        return {{"type", "array"}, {"items", table(*k.fields)}, {"minItems", 1}};
      case T::any:
        return k.json_shape.empty() ? ordered_json::object() : json_shape_value(k.json_shape);
    }
    return ordered_json::object();
  }
};

void collect_dotted(const KeyTable& t, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& k : t.keys) {
    if (k.type == T::any && prefix.empty())
      continue;  // the study sections are not scenario values
    const std::string path = prefix + std::string(k.name);
    out.push_back(path);
    if (k.fields == nullptr)
      continue;
    if (k.type == T::map_list) {
      out.push_back(path + ".N");
      collect_dotted(*k.fields, path + ".N.", out);
    } else if (k.type == T::map || k.type == T::choice)
      collect_dotted(*k.fields, path + ".", out);
  }
}

}  // namespace

ordered_json json_shape_value(std::string_view json_shape) {
  std::string text(json_shape);
  const std::string placeholder = "\"{dotted_keys}\"";
  for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder))
    text.replace(at, placeholder.size(), R"({"$ref": "#/$defs/dotted_key"})");
  return ordered_json::parse(text);
}

std::vector<std::string> dotted_keys(const KeyTable& table) {
  std::vector<std::string> out;
  collect_dotted(table, "", out);
  return out;
}

ordered_json json_schema(const KeyTable& document, std::string_view title, const KeyTable& dotted_keys_of,
                         const std::vector<std::string_view>& leave_out) {
  // Dotted keys: the plain ones as an enum (editors complete them), list
  // items ("cluster.groups.1.nodes") as patterns.
  ordered_json plain = ordered_json::array();
  std::string indexed;
  for (const auto& key : dotted_keys(dotted_keys_of)) {
    if (key.find(".N") == std::string::npos) {
      plain.push_back(key);
      continue;
    }
    std::string p;
    for (std::size_t i = 0; i < key.size(); ++i) {
      if (key.compare(i, 2, ".N") == 0 && (i + 2 == key.size() || key[i + 2] == '.')) {
        p += "\\.[0-9]+";
        ++i;
      } else {
        p += regex_escape(std::string_view(&key[i], 1));
      }
    }
    indexed.append(indexed.empty() ? "" : "|").append(p);
  }
  const ordered_json dotted = {
      {"anyOf", {{{"enum", plain}}, {{"pattern", std::string("^(").append(indexed).append(")$")}}}}};

  Generator generator;
  ordered_json schema = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
                         {"title", std::string(title)}};
  const ordered_json body = generator.table(document, leave_out);
  for (const auto& [k, v] : body.items())
    schema[k] = v;
  schema["$defs"] = {
      {"bytes", quantity_def(units::Quantity::bytes, "a size", "80GiB, 40MB")},
      {"bandwidth",
       quantity_def(units::Quantity::bandwidth, "a bandwidth", "400Gbps (bits), 900GBps or 900GB/s")},
      {"duration", quantity_def(units::Quantity::duration, "a duration", "1.5us, 30min")},
      {"flop_rate", quantity_def(units::Quantity::flop_rate, "a FLOP rate", "312TFLOPS")},
      {"power", quantity_def(units::Quantity::power, "a power", "700W")},
      {"dotted_key", dotted},
  };
  return schema;
}

void add_trace_rule(ordered_json& schema) {
  const auto requires_key = [](std::string_view key) {
    ordered_json rule;
    rule["required"] = ordered_json::array({key});
    return rule;
  };
  schema["if"] = requires_key("workload");
  ordered_json model_or_plan;
  model_or_plan["anyOf"] = ordered_json::array({requires_key("model"), requires_key("plan")});
  schema["then"]["not"] = model_or_plan;
  schema["else"]["required"] = ordered_json::array({"model", "plan"});
}

ordered_json scenario_schema() {
  auto schema = json_schema(scenario_keys(), "trainsim scenario", scenario_keys(), {"sweep", "variants"});
  add_trace_rule(schema);
  return schema;
}

}  // namespace trainsim::scenario
