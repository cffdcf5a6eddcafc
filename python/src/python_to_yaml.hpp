#pragma once
// Python values as YAML, for Scenario.from_dict, with_ and the study a
// sweep writes: dicts with str keys, lists and tuples, str, int, float,
// bool and None. The values come from users, so every other shape is an
// error naming the path of keys that leads to it, never a crash:
//
//   a dict or list nested deeper than kMaxNestingLevels   InputError "model.moe: nested more than 64 levels"
//   a container holding itself (on the current path)       InputError "plan.x: refers to itself (...)"
//   more than kMaxValues values, or more YAML than a       InputError (a shared sub-list counts each time:
//   scenario file may hold (16 MiB)                        [x, x] doubled 60 times is 2^60 values)
//   a str that is not valid Unicode (a lone surrogate),    InputError, the key and the str escaped
//   or holds a noncharacter (U+FFFF: YAML cannot hold it)
//   nan, inf, an int too long for Python to print          InputError
//   a set, bytes, an object, a key that is not a str       TypeError
//
// Only CPython's own conversions run (no __repr__, __str__ or __iter__ of a
// subclass), on copies of each dict's items and list's elements, so no user
// code runs between two steps of an iteration; objects with __index__ (numpy
// integers) are the one exception, called in each of the two passes (one
// checks and counts, one writes). A str holding a control character (C0,
// DEL, C1) or a LINE / PARAGRAPH SEPARATOR is written double-quoted with
// its non-ASCII escaped (yaml-cpp would write some of them raw, which a
// reader takes for line breaks); one starting with "---" or "..." double-quoted (at the
// start of a line they would mark a document). Shared by the module (module.cpp) and the fuzz target
// tests/fuzz/python_dict_fuzz.cpp.
#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>

namespace trainsim::python {

// A scenario nests 4 or 5 levels (perturbations.slow_gpus[0].gpus[1]).
inline constexpr std::size_t kMaxNestingLevels = 64;
// About what a scenario file of the reader's cap (16 MiB) could hold; the
// YAML itself is held to that cap too (platforms::kMaxYamlInputBytes).
inline constexpr std::size_t kMaxValues = 1'000'000;  // (spelled out in the message)

// `value` as YAML text: block style (a document, ending in a newline) or
// flow style (one line). `where` starts every message ("<from_dict>").
// Throws platforms::InputError or pybind11::type_error.
std::string yaml_from_python(pybind11::handle value, const std::string& where, bool flow = false);

// `key=TEXT` as `--set` reads it: a str as it is (so "400Gbps" and "auto"
// mean what they mean on the command line), True / False / None as true /
// false / null, numbers as Python prints them, dicts and lists in YAML flow
// style. `where` starts every message ("Scenario.with_").
std::string override_from_python(pybind11::handle key, pybind11::handle value, const std::string& where);

}  // namespace trainsim::python
