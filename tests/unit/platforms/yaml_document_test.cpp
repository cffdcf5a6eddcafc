#include "platforms/yaml_document.hpp"

#include <gtest/gtest.h>

#include "platforms/input_error.hpp"
#include "platforms/yaml_reader.hpp"

namespace trainsim::platforms {
namespace {

std::string document_error(const std::string& text) {
  try {
    load_yaml_document(text, "s.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(YamlDocument, RefusesASecondDocumentAtItsLine) {
  const auto message = document_error("name: a\nseed: 1\n---\nname: b\n");
  EXPECT_EQ(message.rfind("s.yaml:3:1: a second YAML document (after `---`), which trainsim would ignore", 0),
            0u)
      << message;
  EXPECT_NE(message.find("expected one document"), std::string::npos) << message;
}

TEST(YamlDocument, RefusesAnEmptySecondDocumentToo) {
  EXPECT_EQ(document_error("name: a\n---\n").rfind("s.yaml:2:1: a second YAML document", 0), 0u);
  EXPECT_EQ(document_error("name: a\n...\n---\n# nothing\n").rfind("s.yaml:3:1: a second", 0), 0u);
}

TEST(YamlDocument, RefusesEveryExplicitTagNamingItAsWritten) {
  EXPECT_EQ(
      document_error("name: a\nplan: !!python/object:os.system {}\n"),
      "s.yaml:2:7: YAML tag '!!python/object:os.system' refused: trainsim reads a value by what its key "
      "expects, never by a tag; expected plain YAML (remove the tag)");
  EXPECT_EQ(document_error("plan:\n  tp: !!int 4\n").rfind("s.yaml:2:7: YAML tag '!!int' refused", 0), 0u);
  EXPECT_EQ(document_error("name: !!str x\n").rfind("s.yaml:1:7: YAML tag '!!str' refused", 0), 0u);
  EXPECT_EQ(document_error("name: !custom x\n").rfind("s.yaml:1:7: YAML tag '!custom' refused", 0), 0u);
  EXPECT_EQ(document_error("!!map {name: x}\n").rfind("s.yaml:1:1: YAML tag '!!map' refused", 0), 0u);
  EXPECT_EQ(document_error("? !!str name\n: x\n").rfind("s.yaml:1:3: YAML tag '!!str' refused", 0), 0u);
  EXPECT_EQ(document_error("%TAG !e! tag:example.com,2000:\n---\nname: !e!x y\n")
                .rfind("s.yaml:3:7: YAML tag 'tag:example.com,2000:x' refused", 0),
            0u);
}

TEST(YamlDocument, ReadsOneDocumentWithItsMarkersQuotesAnchorsAndTheNonSpecificTag) {
  EXPECT_EQ(load_yaml_document("---\nname: a\n...\n", "s.yaml")["name"].Scalar(), "a");
  EXPECT_EQ(load_yaml_document("%YAML 1.2\n---\nname: a\n", "s.yaml")["name"].Scalar(), "a");
  EXPECT_EQ(load_yaml_document("a: &x 4\nb: *x\nc: '5'\nd: ! 6\n", "s.yaml")["d"].Scalar(), "6");
  EXPECT_TRUE(load_yaml_document("", "s.yaml").IsNull());
  EXPECT_TRUE(load_yaml_document("# only a comment\n", "s.yaml").IsNull());
}

TEST(YamlDocument, NotYamlAndNotUtf8KeepTheirMessages) {
  EXPECT_EQ(document_error("a: [1\n").rfind("s.yaml:", 0), 0u);
  EXPECT_NE(document_error("a: [1\n").find("not valid YAML"), std::string::npos);
  EXPECT_EQ(document_error("a: caf\xe9\n"),
            "s.yaml:1:7: not valid UTF-8 (byte 0xe9); save the file as UTF-8");
}

TEST(YamlDocument, ASetValueIsRefusedNamingTheOption) {
  const auto value_error = [](const std::string& text) {
    try {
      load_yaml_value(text, "--set plan.tp=" + text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(value_error("4\n---\n8").rfind("--set plan.tp=4\\x0a---\\x0a8: a second YAML document", 0), 0u);
  EXPECT_EQ(value_error("!!int 4").rfind("--set plan.tp=!!int 4: YAML tag '!!int' refused", 0), 0u);
  EXPECT_EQ(value_error("[1").rfind("--set plan.tp=[1: the value is not valid YAML", 0), 0u);
  EXPECT_EQ(load_yaml_value("4", "--set plan.tp=4").Scalar(), "4");
}

TEST(YamlDocument, ApplyOverrideRefusesASecondDocumentOrATagInItsValue) {
  YAML::Node root = load_yaml_document("plan: {tp: 2}\n", "s.yaml");
  InputSource source("s.yaml");
  ErrorList errors;
  apply_override(root, "plan.tp=4\n---\n8", source, errors);
  apply_override(root, "name=!!python/object/apply:os.system [\"true\"]", source, errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors.problems()[0].find("a second YAML document"), std::string::npos) << errors.problems()[0];
  EXPECT_NE(errors.problems()[1].find("YAML tag '!!python/object/apply:os.system' refused"),
            std::string::npos)
      << errors.problems()[1];
  EXPECT_EQ(root["plan"]["tp"].Scalar(), "2");  // nothing applied
}

}  // namespace
}  // namespace trainsim::platforms
