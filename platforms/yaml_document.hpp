#pragma once
// The one way trainsim turns YAML text into a node tree (scenarios, studies,
// cluster files, templates, plan-search files, --set values, the Python
// module): yaml-cpp's YAML::Load, plus what it lets pass without a word.
//
//   - A second document (`---` after the first): YAML::Load keeps the first
//     and drops the rest, so half a file would be silently ignored. Refused
//     at the `---` line, empty or not.
//   - An explicit tag (`!!python/object:os.system`, `!!str`, `!!int`,
//     `!custom`): trainsim reads values by what its keys expect (a number, a
//     quantity with its unit, a word, a list, a map), never by a tag, so a
//     tag would be ignored at best. Every explicit tag is refused, the
//     standard ones included; only `!` alone stays, which YAML defines as
//     "plain text" and yaml-cpp reports exactly as quoting (`! 4` is "4").
//   - Not valid YAML, and text that is not valid UTF-8.
//
// Every failure is an InputError naming where: "FILE:LINE:COLUMN: ..." for a
// file, "--set KEY=VALUE: the value ..." for an option.
#include <yaml-cpp/yaml.h>

#include <string>

namespace trainsim::platforms {

// The one document of `text` (a null node when it holds none); `file` names
// it in messages.
YAML::Node load_yaml_document(const std::string& text, const std::string& file);

// The value of `--set KEY=VALUE`, `text` being what follows '=' and `option`
// the whole option as messages name it ("--set plan.tp=4").
YAML::Node load_yaml_value(const std::string& text, const std::string& option);

}  // namespace trainsim::platforms
