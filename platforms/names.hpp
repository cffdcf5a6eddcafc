#pragma once
// Names: the labels a user gives to a scenario, a study, its variants, a
// model, a cluster, a GPU, an export (`export --name`) or a plot file. Some
// become folder or file names (runs/<scenario>/, runs/<study>/, the
// variants' folders of `compare`, <name>.<rank>.et), all of them are printed
// on the terminal, so every one follows one rule, checked where it enters
// (the strict YAML reader's ValueType::label, `--set`, the CLI options,
// the study reader): 1 to 128 characters, each a letter, a digit, '.', '-'
// or '_', the first neither '.' nor '-'. Such a name cannot climb out of a
// folder (no '/', no ".."), hide (".x"), read as an option ("-x"), hold a
// NUL or a control character, and means the same on every filesystem.
//
// '+' is left out: every name shipped with trainsim fits without it, and
// the set stays the one a URL path, a shell word and a Slurm job name take
// as they are.
#include <cstddef>
#include <string>
#include <string_view>

namespace trainsim::platforms {

inline constexpr std::size_t kMaxNameLength = 128;

// Whether `c` may appear in a name (anywhere but first for '.' and '-').
bool is_name_character(char c);

// Empty when `text` is a valid name, else what is wrong with it ("is empty",
// "starts with '.'", "holds '/'", "is 200 characters long").
std::string name_problem(std::string_view text);
inline bool is_valid_name(std::string_view text) {
  return name_problem(text).empty();
}

// What a name may hold, for messages.
std::string_view name_rule();
// The same rule as a regular expression (ECMAScript, anchored), for the
// JSON Schemas of docs/schema/.
std::string_view name_pattern();

// The message for an invalid name: "'../x' is not a valid name: it holds
// '/' (expected 1 to 128 ...)", the text shown with its control characters
// escaped (platforms/printable_text.hpp). Empty for a valid name.
std::string invalid_name_message(std::string_view text);

// A valid name made from any text, for names trainsim derives rather than
// reads (the default scenario name from the file's stem, a plot's file from
// its columns): every character a name may not hold becomes '_', leading
// '.', '-' and '_' and trailing '_' go, at most kMaxNameLength characters;
// `fallback` (itself a valid name) when nothing is left.
std::string name_from_text(std::string_view text, std::string_view fallback);

}  // namespace trainsim::platforms
