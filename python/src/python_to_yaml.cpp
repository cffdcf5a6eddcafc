#include "python/src/python_to_yaml.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"

namespace trainsim::python {
namespace py = pybind11;

namespace {

// A new reference as an object (null stays null: the caller checks).
py::object steal(PyObject* p) {
  return py::reinterpret_steal<py::object>(p);
}

// The message of the Python error being raised, which is cleared.
std::string take_python_error() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  const py::object t = steal(type), v = steal(value), tb = steal(traceback);
  if (!v)
    return "unknown error";
  const py::object text = steal(PyObject_Str(v.ptr()));
  const char* c = text ? PyUnicode_AsUTF8(text.ptr()) : nullptr;
  if (!c) {
    PyErr_Clear();
    return "unknown error";
  }
  return c;
}

// The UTF-8 of a str, or nothing when it holds a lone surrogate.
std::optional<std::string_view> utf8(PyObject* s) {
  Py_ssize_t size = 0;
  const char* c = PyUnicode_AsUTF8AndSize(s, &size);
  if (!c) {
    PyErr_Clear();
    return std::nullopt;
  }
  return std::string_view(c, static_cast<std::size_t>(size));
}

// The first Unicode noncharacter in valid UTF-8 (U+FDD0..U+FDEF, and
// U+FFFE / U+FFFF of every plane), or 0. yaml-cpp's emitter writes each as
// U+FFFD (emitterutils.cpp), so a str holding one would read back as
// another str: refused instead.
char32_t first_noncharacter(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t length = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = length == 1 ? c : length == 2 ? c & 0x1F : length == 3 ? c & 0x0F : c & 0x07;
    for (std::size_t k = 1; k < length && i + k < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE)
      return cp;
    i += length;
  }
  return 0;
}

// A str as Python's repr shows it (quotes, control characters and
// surrogates escaped), cut after about 60 bytes. str's own repr, not a
// subclass's: no user code.
std::string shown_str(PyObject* s) {
  const py::object r = steal(PyUnicode_Type.tp_repr(s));
  const auto text = r ? utf8(r.ptr()) : std::nullopt;
  if (!text) {
    PyErr_Clear();
    return "a str";
  }
  std::string out(*text);
  if (out.size() > 64) {
    std::size_t cut = 60;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
      --cut;
    out = out.substr(0, cut) + "...";
  }
  return out;
}

// A key as a segment of the path: itself when it is printable, else its repr.
std::string shown_key(PyObject* key) {
  const auto text = utf8(key);
  const bool plain = text && !text->empty() && std::none_of(text->begin(), text->end(), [](char c) {
                       return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
                     });
  return plain ? std::string(*text) : shown_str(key);
}

// Whether a str holds a character yaml-cpp may write raw although a reader
// takes it for a line break or a control: any C0 control and DEL (a lone
// CR was written in a plain scalar, which yaml-cpp itself reads as a line
// break: found by the fuzz target), NEL and the other C1 controls, LINE
// and PARAGRAPH SEPARATOR (line breaks to a YAML 1.1 reader such as PyYAML).
bool needs_escapes(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F)
      return true;
    if (i + 1 == s.size())
      break;
    const auto d = static_cast<unsigned char>(s[i + 1]);
    if (c == 0xC2 && d >= 0x80 && d <= 0x9F)
      return true;
    if (c == 0xE2 && d == 0x80 && i + 2 < s.size() &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9))
      return true;
  }
  return false;
}

std::string type_name(PyObject* value) {
  return Py_TYPE(value)->tp_name;
}

// A scalar's text through the emitter: plain or quoted as yaml-cpp sees
// fit; double-quoted with its non-ASCII escaped when needs_escapes; and
// double-quoted when it starts with "---" or "...", which yaml-cpp writes
// plain although at the start of a line (a document's only scalar, a key
// "... x") they read as a document's start or end (found by the fuzz
// target: the str "..." read back as null).
void write_scalar(YAML::Emitter& out, std::string_view text) {
  if (needs_escapes(text))
    out << YAML::EscapeNonAscii << YAML::DoubleQuoted;
  else if (text.starts_with("---") || text.starts_with("..."))
    out << YAML::DoubleQuoted;
  out << std::string(text);
}

class Converter {
 public:
  explicit Converter(const std::string& where) : where_(where) {}

  // Starts the path at `key` (an override's dotted key, shown as it is).
  void start_at(std::string key) { path_.push_back({.key = nullptr, .index = 0, .text = std::move(key)}); }

  // Two passes. The first checks and counts everything without writing (a
  // container reached again is counted from what it counted the first
  // time: a list doubled 60 times is refused after 61 steps, not 2^60).
  // The second streams the YAML, with every check again (an __index__ may
  // have changed what the first pass saw). No tree of yaml-cpp nodes: each
  // costs about 8 microseconds to add (their memory sets merge), seconds
  // for a large dict.
  std::string convert(PyObject* value, bool flow) {
    counted_.emplace();
    walk(value, nullptr);
    counted_.reset();
    alive_.clear();
    values_ = yaml_bytes_ = 0;
    YAML::Emitter out;
    if (flow) {
      out.SetMapFormat(YAML::Flow);
      out.SetSeqFormat(YAML::Flow);
    }
    walk(value, &out);
    if (!out.good())
      throw std::logic_error("cannot write YAML: " + out.GetLastError());
    return std::string(out.c_str(), out.size()) + (flow ? "" : "\n");
  }

  // The text of a scalar (str, int, float and __index__ objects), or nothing
  // for another type.
  std::optional<std::string> scalar_text(PyObject* value) {
    if (PyUnicode_Check(value)) {
      const auto text = utf8(value);
      if (!text)
        throw input_error(fmt::format(
            "{} is not valid Unicode (a lone surrogate) and cannot be written as UTF-8", shown_str(value)));
      refuse_noncharacter(*text, value, "");
      add_text(text->size());
      return std::string(*text);
    }
    if (PyLong_Check(value))
      return integer_text(value);
    if (PyFloat_Check(value))
      return float_text(PyFloat_AS_DOUBLE(value));
    if (PyIndex_Check(value)) {
      // numpy.int64 and the like: their integer.
      const py::object index = steal(PyNumber_Index(value));
      if (!index)
        throw py::type_error(
            message(fmt::format("a {} whose __index__ failed ({})", type_name(value), take_python_error())));
      return integer_text(index.ptr());
    }
    return std::nullopt;
  }

  py::type_error unsupported(PyObject* value) const {
    return py::type_error(message(
        fmt::format("a {} cannot be written in a scenario (expected a dict, list, tuple, str, int, float, "
                    "bool or None)",
                    type_name(value))));
  }

 private:
  std::string message(const std::string& what) const {
    return fmt::format("{}: {}: {}", where_, shown_path(path_.size()), what);
  }
  // The first `size` segments of the path, dotted ("plan.x[0]"); a path of
  // more than 8 shows its first and last 3 ("plan[0][0]...[0][0][0]").
  // Made only for a message: a segment holds the key object or the index.
  std::string shown_path(std::size_t size) const {
    if (size == 0)
      return "the top level";
    std::string path;
    for (std::size_t i = 0; i < size; ++i) {
      if (size > 8 && i == 3) {
        path += "...";
        i = size - 3;
      }
      const Segment& segment = path_[i];
      if (segment.key || !segment.text.empty())
        path += (path.empty() ? "" : ".") + (segment.key ? shown_key(segment.key) : segment.text);
      else
        path += fmt::format("[{}]", segment.index);
    }
    return path;
  }
  void refuse_noncharacter(std::string_view text, PyObject* str, const char* what) const {
    if (const char32_t cp = first_noncharacter(text))
      throw input_error(fmt::format("{}{} holds U+{:04X}, a Unicode noncharacter, which YAML cannot hold",
                                    what, shown_str(str), static_cast<std::uint32_t>(cp)));
  }
  platforms::InputError input_error(const std::string& what) const {
    return platforms::InputError({message(what)});
  }

  // Each value counts, and the YAML it makes (its text, and a line indented
  // by its level), once per time it is reached: a list that holds the same
  // sub-list twice, doubled 60 times, would otherwise write 2^60 values.
  void count() {
    ++values_;
    yaml_bytes_ += 2 * open_.size() + 3;
    check_size();
  }
  void add_text(std::size_t bytes) {
    yaml_bytes_ += bytes;
    check_size();
  }
  void check_size() const {
    if (values_ > kMaxValues)
      throw input_error(
          "more than 1,000,000 values (a scenario holds a few hundred; a list or dict "
          "reached several times counts each time)");
    if (yaml_bytes_ > platforms::kMaxYamlInputBytes)
      throw input_error(
          fmt::format("more than {} MiB as YAML (the most a scenario file may hold; a list or "
                      "dict reached several times counts each time)",
                      platforms::kMaxYamlInputBytes >> 20));
  }

  std::string integer_text(PyObject* integer) {
    // int's own repr (not a subclass's __str__); Python refuses ints of
    // more than 4,300 digits (sys.set_int_max_str_digits).
    const py::object text = steal(PyLong_Type.tp_repr(integer));
    if (!text)
      throw input_error(fmt::format("an integer that cannot be written ({})", take_python_error()));
    const auto digits = utf8(text.ptr());
    add_text(digits ? digits->size() : 0);
    return std::string(digits.value_or("0"));
  }

  std::string float_text(double value) {
    if (!std::isfinite(value))
      throw input_error(
          fmt::format("{} is not a finite number (a scenario's numbers are finite)", std::isnan(value) ? "nan"
                                                                                     : value > 0       ? "inf"
                                                                                                 : "-inf"));
    // As Python's repr prints it (1.0, 1e+20), so that a whole-number key
    // given 1.0 says what it said before.
    char* text = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
    if (!text)
      throw std::bad_alloc();
    std::string out(text);
    PyMem_Free(text);
    add_text(out.size());
    return out;
  }

  // Checks `value` and, when `out` is given, writes it there.
  void walk(PyObject* value, YAML::Emitter* out) {
    count();
    if (value == Py_None) {
      if (out)
        *out << YAML::Null;
    } else if (PyBool_Check(value)) {
      if (out)
        *out << std::string(value == Py_True ? "true" : "false");
    } else if (PyDict_Check(value) || PyList_Check(value) || PyTuple_Check(value)) {
      container(value, out);
    } else if (auto text = scalar_text(value)) {
      if (out)
        write_scalar(*out, *text);
    } else {
      throw unsupported(value);
    }
  }

  void container(PyObject* value, YAML::Emitter* out) {
    const bool is_dict = PyDict_Check(value);
    const char* kind = is_dict ? "dict" : PyList_Check(value) ? "list" : "tuple";
    for (std::size_t i = 0; i < open_.size(); ++i)
      if (open_[i].object == value)
        throw input_error(fmt::format("refers to itself (it is the {} at {}, which holds it)", kind,
                                      shown_path(open_[i].path_size)));
    const std::size_t level = open_.size() + 1;
    if (level > kMaxNestingLevels)
      throw input_error(
          fmt::format("nested more than {} levels (a scenario nests a few)", kMaxNestingLevels));
    // Reached before in this pass: counted as then, and walked again only
    // when it now goes too deep (for the message's path). A cycle through
    // it would have been found the first time.
    if (counted_) {
      if (const auto seen = counted_->find(value); seen != counted_->end()) {
        const Counted& c = seen->second;
        values_ += c.values - 1;  // walk() counted the container itself
        // Indented 2 bytes more per value for each level deeper than then
        // (shallower: counted as then, a little over).
        yaml_bytes_ += c.yaml_bytes + (level > c.level ? (c.values - 1) * 2 * (level - c.level) : 0);
        check_size();
        if (level + c.height - 1 <= kMaxNestingLevels) {
          deepest_ = std::max(deepest_, level + c.height - 1);
          return;
        }
      }
    }
    const std::size_t values_before = values_, bytes_before = yaml_bytes_, deepest_before = deepest_;
    deepest_ = level;
    open_.push_back({value, path_.size()});
    if (is_dict)
      dict(value, out);
    else
      sequence(value, out);
    open_.pop_back();
    if (counted_) {
      counted_->insert_or_assign(value, Counted{values_ - values_before + 1, yaml_bytes_ - bytes_before,
                                                deepest_ - level + 1, level});
      alive_.push_back(py::reinterpret_borrow<py::object>(value));
    }
    deepest_ = std::max(deepest_before, deepest_);
  }

  void dict(PyObject* value, YAML::Emitter* out) {
    // A copy of the items: the values' conversions cannot change what is
    // being iterated.
    const py::object items = steal(PyDict_Items(value));
    if (!items)
      throw py::error_already_set();
    if (out)
      *out << YAML::BeginMap;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.ptr()); ++i) {
      PyObject* item = PyList_GET_ITEM(items.ptr(), i);
      PyObject* key = PyTuple_GET_ITEM(item, 0);
      if (!PyUnicode_Check(key))
        throw py::type_error(message(
            PyLong_Check(key) && !PyBool_Check(key)
                ? fmt::format("the key {} is an int (the keys of a scenario are str)", integer_text(key))
                : fmt::format("a key of type {} (the keys of a scenario are str)", type_name(key))));
      const auto key_text = utf8(key);
      if (!key_text)
        throw input_error(
            fmt::format("the key {} is not valid Unicode (a lone surrogate) and cannot be written as UTF-8",
                        shown_str(key)));
      refuse_noncharacter(*key_text, key, "the key ");
      add_text(key_text->size());
      if (out) {
        *out << YAML::Key;
        write_scalar(*out, *key_text);
        *out << YAML::Value;
      }
      path_.push_back({.key = key, .index = 0, .text = {}});
      walk(PyTuple_GET_ITEM(item, 1), out);
      path_.pop_back();
    }
    if (out)
      *out << YAML::EndMap;
  }

  void sequence(PyObject* value, YAML::Emitter* out) {
    const py::object items =
        PyTuple_Check(value) ? py::reinterpret_borrow<py::object>(value) : steal(PyList_AsTuple(value));
    if (!items)
      throw py::error_already_set();
    if (out)
      *out << YAML::BeginSeq;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items.ptr()); ++i) {
      path_.push_back({.key = nullptr, .index = i, .text = {}});
      walk(PyTuple_GET_ITEM(items.ptr(), i), out);
      path_.pop_back();
    }
    if (out)
      *out << YAML::EndSeq;
  }

  struct Segment {
    PyObject* key = nullptr;  // a dict's key (alive: the items' copy holds it)
    Py_ssize_t index = 0;     // else a list's index
    std::string text;         // or start_at's key
  };
  struct Open {
    PyObject* object;
    std::size_t path_size;  // the length of the path that leads to it
  };
  // What a container added the first time the first pass reached it, at
  // `level` (its YAML is indented by 2 more per level deeper).
  struct Counted {
    std::size_t values, yaml_bytes, height, level;
  };
  const std::string& where_;
  std::vector<Segment> path_;
  std::vector<Open> open_;  // the containers on the path, outermost first
  std::size_t values_ = 0;
  std::size_t yaml_bytes_ = 0;
  std::size_t deepest_ = 0;  // the deepest level reached below the current container
  // First pass only, keyed by address; alive_ holds each container so that
  // no address is reused during the pass, whatever an __index__ removes.
  std::optional<std::unordered_map<PyObject*, Counted>> counted_;
  std::vector<py::object> alive_;
};

}  // namespace

std::string yaml_from_python(py::handle value, const std::string& where, bool flow) {
  return Converter(where).convert(value.ptr(), flow);
}

std::string override_from_python(py::handle key, py::handle value, const std::string& where) {
  Converter converter(where);
  if (!PyUnicode_Check(key.ptr()))
    throw py::type_error(
        fmt::format("{}: a key of type {} (keys are dotted str: \"plan.tp\")", where, type_name(key.ptr())));
  const auto key_text = utf8(key.ptr());
  if (!key_text)
    throw platforms::InputError(
        {fmt::format("{}: the key {} is not valid Unicode (a lone surrogate) and cannot be written as UTF-8",
                     where, shown_str(key.ptr()))});
  converter.start_at(shown_key(key.ptr()));
  PyObject* v = value.ptr();
  std::string text;
  if (v == Py_None)
    text = "null";
  else if (PyBool_Check(v))
    text = v == Py_True ? "true" : "false";
  else if (PyDict_Check(v) || PyList_Check(v) || PyTuple_Check(v))
    text = converter.convert(v, true);
  else if (auto scalar = converter.scalar_text(v))
    text = *scalar;
  else
    throw converter.unsupported(v);
  return std::string(*key_text) + "=" + text;
}

}  // namespace trainsim::python
