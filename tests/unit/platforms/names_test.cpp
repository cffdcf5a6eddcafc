// The name policy (platforms/names.hpp) and the escaping of text shown on a
// terminal (platforms/printable_text.hpp): issue 31, class 1.
#include "platforms/names.hpp"

#include <gtest/gtest.h>

#include <regex>

#include "platforms/input_error.hpp"
#include "platforms/printable_text.hpp"
#include "platforms/yaml_reader.hpp"

namespace trainsim::platforms {
namespace {

TEST(Names, LettersDigitsDotsDashesAndUnderscoresAreNames) {
  for (const char* name :
       {"quickstart", "nemo-h100-llama3.1-8b", "A100-SXM-80GB", "3d-tp2-pp2", "_x", "a.b_c-d", "1f1b", "x"})
    EXPECT_TRUE(is_valid_name(name)) << name;
  EXPECT_TRUE(is_valid_name(std::string(kMaxNameLength, 'a')));
}

TEST(Names, PathsHiddenNamesOptionsAndControlCharactersAreNot) {
  EXPECT_EQ(name_problem("../../x"), "it holds '/'");
  EXPECT_EQ(name_problem("/tmp/x"), "it holds '/'");
  EXPECT_EQ(name_problem(".."), "it starts with '.'");
  EXPECT_EQ(name_problem(".hidden"), "it starts with '.'");
  EXPECT_EQ(name_problem("-rf"), "it starts with '-'");
  EXPECT_EQ(name_problem(""), "it is empty");
  EXPECT_EQ(name_problem(std::string(kMaxNameLength + 1, 'a')), "it is 129 characters long");
  EXPECT_EQ(name_problem(std::string("q\0z", 3)), "it holds '\\0'");
  EXPECT_EQ(name_problem("a\x1b[2Jb"), "it holds '\\x1b'");
  EXPECT_EQ(name_problem("my run"), "it holds a space");
  EXPECT_EQ(name_problem("caf\xc3\xa9"), "it holds a character other than an ASCII letter or digit");
  EXPECT_EQ(name_problem("a+b"), "it holds '+'");
  EXPECT_EQ(name_problem("a\\b"), "it holds '\\'");
}

TEST(Names, TheMessageShowsTheValueEscapedAndTheRule) {
  const auto message = invalid_name_message(std::string("q\0z\x1b", 4));
  EXPECT_EQ(message.find('\0'), std::string::npos);
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  EXPECT_NE(message.find("'q\\0z\\x1b' is not a valid name: it holds '\\0' (a name is 1 to 128 letters"),
            std::string::npos)
      << message;
  EXPECT_EQ(invalid_name_message("fine"), "");
}

TEST(Names, ThePatternOfTheSchemasIsTheSameRule) {
  const std::regex pattern{std::string(name_pattern())};
  const std::vector<std::string> texts{"quickstart",
                                       "a.b",
                                       "_x",
                                       "x-",
                                       "..",
                                       ".x",
                                       "-x",
                                       "a/b",
                                       "",
                                       "a b",
                                       "a+b",
                                       std::string(128, 'z'),
                                       std::string(129, 'z'),
                                       std::string("a\0b", 3)};
  for (const auto& text : texts)
    EXPECT_EQ(std::regex_match(text, pattern), is_valid_name(text)) << text;
}

TEST(Names, DerivedNamesAreMadeValid) {
  EXPECT_EQ(name_from_text("my scenario", "scenario"), "my_scenario");
  EXPECT_EQ(name_from_text("<from_dict>", "scenario"), "from_dict");
  EXPECT_EQ(name_from_text("..", "scenario"), "scenario");
  EXPECT_EQ(name_from_text("", "study"), "study");
  EXPECT_EQ(name_from_text("plan-../x-8", "plan"), "plan-.._x-8");
  EXPECT_EQ(name_from_text(std::string(300, 'a'), "x").size(), kMaxNameLength);
  for (const char* text : {"a/b", "\x1b", ".x", "-x", "tokens_per_s-vs-plan.tp"})
    EXPECT_TRUE(is_valid_name(name_from_text(text, "x"))) << text;
}

TEST(NamesInYaml, ALabelKeyRefusesAPathWithItsLineAndTheRule) {
  KeyTable table{"t", {}};
  KeySpec name;
  name.name = "name";
  name.type = ValueType::label;
  table.keys.push_back(name);
  const InputSource source("s.yaml");
  ErrorList errors;
  MapReader top(YAML::Load("name: \"../../x\"\n"), "", source, errors, &table);
  EXPECT_FALSE(top.label("name").has_value());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(
      errors.problems()[0],
      "s.yaml:1:7: name: '../../x' is not a valid name: it holds '/' (a name is 1 to 128 letters, digits, "
      "'.', '-' or '_', not starting with '.' or '-')");
  ErrorList fine;
  MapReader ok(YAML::Load("name: run-1\n"), "", source, fine, &table);
  EXPECT_EQ(ok.label("name"), "run-1");
  EXPECT_TRUE(fine.empty());
  // A label key read as free text is a disagreement of table and reader.
  MapReader text(YAML::Load("name: x\n"), "", source, fine, &table);
  EXPECT_THROW(text.text("name"), std::logic_error);
}

TEST(PrintableText, ControlCharactersAreEscapedAndTheRestKept) {
  EXPECT_EQ(printable_text(std::string("q\0z", 3)), "q\\0z");
  EXPECT_EQ(printable_text("\x1b]0;owned\x07"), "\\x1b]0;owned\\x07");
  EXPECT_EQ(printable_text("a\nerror: forged"), "a\\x0aerror: forged");
  EXPECT_EQ(printable_text("tab\there\x7f"), "tab\\x09here\\x7f");
  EXPECT_EQ(printable_text("caf\xc3\xa9 \xe2\x80\x94 ok"), "caf\xc3\xa9 \xe2\x80\x94 ok");
  EXPECT_EQ(printable_text("\xc2\x9b"
                           "2J"),
            "\\xc2\\x9b2J");  // C1 CSI
  EXPECT_EQ(printable_text("a\xe2\x80\xae"
                           "b"),
            "a\\xe2\\x80\\xaeb");                               // right-to-left override
  EXPECT_EQ(printable_text("bad \xff\xc3"), "bad \\xff\\xc3");  // not UTF-8
  const std::string once = printable_text("\x1b\n\xff");
  EXPECT_EQ(printable_text(once), once);
}

TEST(PrintableText, InputErrorsKeepTheirProblemsPrintable) {
  const InputError e({"s.yaml:1:7: name: 'a\x1b[2J'", "second"});
  EXPECT_EQ(e.problems()[0], "s.yaml:1:7: name: 'a\\x1b[2J'");
  EXPECT_EQ(std::string(e.what()), "s.yaml:1:7: name: 'a\\x1b[2J'\nsecond");
}

}  // namespace
}  // namespace trainsim::platforms
