#include "platforms/yaml_document.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <optional>
#include <sstream>

#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"

namespace trainsim::platforms {
namespace {

// What a pass over the parser's events found first: a second document or an
// explicit tag, with where it is.
struct Refusal {
  YAML::Mark mark;
  std::string what;
};

// yaml-cpp names a node without a tag "?" (plain) or "!" (quoted, or the
// non-specific tag `!`, which means the same: text).
bool is_explicit_tag(const std::string& tag) {
  return !tag.empty() && tag != "?" && tag != "!";
}

// "!!python/object:os.system" as written, not yaml-cpp's resolved URI. Tag
// characters are URI characters (printable ASCII), so only the length needs
// bounding.
std::string written_tag(const std::string& tag) {
  constexpr std::string_view kCore = "tag:yaml.org,2002:";
  std::string shown = tag.rfind(kCore, 0) == 0 ? "!!" + tag.substr(kCore.size()) : tag;
  if (shown.size() > 60)
    shown = shown.substr(0, 57) + "...";
  return shown;
}

class Inspector : public YAML::EventHandler {
 public:
  std::optional<Refusal> refusal;

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2 && !refusal)
      refusal = Refusal{mark,
                        "a second YAML document (after `---`), which trainsim would ignore; expected one "
                        "document: remove the `---` and what follows, or merge the two"};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t, const std::string&) override {
    check(mark, tag);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    check(mark, tag);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    check(mark, tag);
  }
  void OnMapEnd() override {}

 private:
  void check(const YAML::Mark& mark, const std::string& tag) {
    if (!refusal && is_explicit_tag(tag))
      refusal = Refusal{mark, fmt::format("YAML tag '{}' refused: trainsim reads a value by what its key "
                                          "expects, never by a tag; expected plain YAML (remove the tag)",
                                          written_tag(tag))};
  }
  int documents_ = 0;
};

YAML::Node load(const std::string& text, const std::string& name, bool located) {
  const auto where = [&](const YAML::Mark& mark) {
    return located ? fmt::format("{}:{}:{}", name, mark.line + 1, mark.column + 1) : name;
  };
  if (const std::size_t bad = first_invalid_utf8(text); bad != text.size()) {
    if (located)
      check_utf8(text, name);
    throw InputError({fmt::format("{}: not valid UTF-8", name)});
  }
  try {
    // First the events, to see what YAML::Load would drop (stopping after
    // the document of the first refusal), then the tree.
    std::istringstream in(text);
    YAML::Parser parser(in);
    Inspector inspector;
    while (!inspector.refusal && parser.HandleNextDocument(inspector)) {
    }
    if (inspector.refusal)
      throw InputError({fmt::format("{}: {}", where(inspector.refusal->mark), inspector.refusal->what)});
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError({located ? fmt::format("{}: not valid YAML: {}", where(e.mark), e.msg)
                              : fmt::format("{}: the value is not valid YAML: {}", name, e.msg)});
  }
}

}  // namespace

YAML::Node load_yaml_document(const std::string& text, const std::string& file) {
  return load(text, file, true);
}

YAML::Node load_yaml_value(const std::string& text, const std::string& option) {
  return load(text, option, false);
}

}  // namespace trainsim::platforms
