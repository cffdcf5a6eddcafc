#pragma once
// Text from the input shown on a terminal: a name, a value or a path in an
// error message may hold an ESC that would clear the screen or retitle the
// window, a NUL, a newline that forges a second "error:" line, or bytes
// that are not UTF-8. Every message goes through printable_text() once
// before it is printed (InputError escapes its problems, sim/cli/main.cpp
// what it prints), so no input reaches the terminal raw.
#include <string>
#include <string_view>

namespace trainsim::platforms {

// `text` with each control character written as an escape: NUL as \0,
// the other C0 controls (tab and newline too) and DEL as \xNN, the C1
// controls (U+0080..U+009F) and the invisible direction overrides
// (U+202A..U+202E, U+2066..U+2069) as the \xNN of their UTF-8 bytes, and
// each byte that is not part of valid UTF-8 as \xNN. Everything else is
// kept, so printable_text(printable_text(t)) == printable_text(t).
std::string printable_text(std::string_view text);

}  // namespace trainsim::platforms
