#include "platforms/yaml_reader.hpp"

#include <gtest/gtest.h>

#include "platforms/spelling.hpp"

namespace trainsim::platforms {
namespace {

const KeyAliases kAliases{{"num_layers", "layers"}, {"hidden_size", "hidden"}};

struct Read {
  ErrorList errors;
  std::vector<std::string> problems() const {
    try {
      errors.throw_if_any();
    } catch (const InputError& e) {
      return e.problems();
    }
    return {};
  }
};

TEST(YamlReader, AliasesReadAsTheirKeyAndErrorsNameTheWrittenName) {
  const InputSource source("m.yaml");
  Read r;
  MapReader m(YAML::Load("num-layers: 24\nhidden_size: x\n"), "model", source, r.errors);
  m.set_aliases(kAliases);
  EXPECT_TRUE(m.has("layers"));
  EXPECT_EQ(m.integer("layers", 1, 100), 24);
  EXPECT_FALSE(m.integer("hidden", 1, 100000).has_value());
  m.finish();
  const auto problems = r.problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("m.yaml:2:14: model.hidden_size (hidden): 'x' is not a whole number"),
            std::string::npos)
      << problems[0];
}

TEST(YamlReader, AKeyGivenUnderTwoNamesIsAnError) {
  const InputSource source("m.yaml");
  Read r;
  MapReader m(YAML::Load("layers: 24\nnum_layers: 32\n"), "model", source, r.errors);
  m.set_aliases(kAliases);
  const auto problems = r.problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("'layers' and 'num_layers' both set model.layers"), std::string::npos)
      << problems[0];
}

// --set under either name overrides what the file says under the other.
TEST(YamlReader, ASetUnderAnotherNameOverridesTheFilesKey) {
  InputSource source("m.yaml");
  ErrorList errors;
  YAML::Node root = YAML::Load("model:\n  layers: 24\n");
  apply_override(root, "model.num_layers=8", source, errors);
  ASSERT_TRUE(errors.empty());
  Read r;
  MapReader m(root["model"], "model", source, r.errors);
  m.set_aliases(kAliases);
  EXPECT_EQ(m.integer("layers", 1, 100), 8);
  m.finish();
  EXPECT_TRUE(r.problems().empty()) << r.problems().front();
}

TEST(YamlReader, UnknownKeysAndValuesSuggestTheNearestKnownOne) {
  const InputSource source("m.yaml");
  Read r;
  MapReader m(YAML::Load("hiden: 4\nnum_layer: 2\nmlp: swigl\n"), "model", source, r.errors);
  m.set_aliases(kAliases);
  m.integer("hidden", 1, 100);
  m.integer("layers", 1, 100);
  m.choice<int>("mlp", {{"gelu", 0}, {"swiglu", 1}});
  m.finish();
  const auto problems = r.problems();
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[0].find("'swigl' is not a known value (did you mean 'swiglu'?)"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("model.hiden: unknown key (did you mean 'hidden'?"), std::string::npos)
      << problems[1];
  EXPECT_NE(problems[2].find("model.num_layer: unknown key (did you mean 'num_layers'?"), std::string::npos)
      << problems[2];
}

TEST(Spelling, SuggestsOnlyNearWords) {
  EXPECT_EQ(closest_word("Layers", {"layers", "hidden"}), "layers");
  EXPECT_EQ(closest_word("hiddne", {"layers", "hidden"}), "hidden");  // a swap is one edit
  EXPECT_EQ(closest_word("gpipe", {"1f1b", "zb_h1"}), std::nullopt);
  EXPECT_EQ(closest_word("tensor-parallel", {"tp", "pp"}), std::nullopt);
  EXPECT_EQ(did_you_mean("seq_length", {"seq_len"}), " (did you mean 'seq_len'?)");
}

}  // namespace
}  // namespace trainsim::platforms
