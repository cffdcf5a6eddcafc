#include "python/src/python_to_yaml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "platforms/input_error.hpp"

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

std::string type_name(PyObject* value) {
  return Py_TYPE(value)->tp_name;
}

class Converter {
 public:
  explicit Converter(const std::string& where) : where_(where) {}

  // Starts the path at `key` (an override's dotted key).
  void start_at(std::string key) { path_.push_back(std::move(key)); }

  // Two passes: the first checks and counts everything without building a
  // node (yaml-cpp's nodes cost about a microsecond and 200 bytes each: a
  // million of them built only to be refused would take seconds), the
  // second builds the tree.
  YAML::Node convert(PyObject* value) {
    node(value, nullptr);
    values_ = text_bytes_ = 0;
    YAML::Node out;
    node(value, &out);
    return out;
  }

  // The text of a scalar (str, int, float and __index__ objects), or nothing
  // for another type.
  std::optional<std::string> scalar_text(PyObject* value) {
    if (PyUnicode_Check(value)) {
      const auto text = utf8(value);
      if (!text)
        throw input_error(fmt::format(
            "{} is not valid Unicode (a lone surrogate) and cannot be written as UTF-8", shown_str(value)));
      count(text->size());
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
  std::string shown_path(std::size_t size) const {
    if (size == 0)
      return "the top level";
    std::string path;
    for (std::size_t i = 0; i < size; ++i) {
      if (size > 8 && i == 3) {
        path += "...";
        i = size - 3;
      }
      path += (path.empty() || path.back() == '.' || path_[i].front() == '[' ? "" : ".") + path_[i];
    }
    return path;
  }
  platforms::InputError input_error(const std::string& what) const {
    return platforms::InputError({message(what)});
  }

  // Each value and each byte of text counts, once per time it is reached:
  // a list that holds the same sub-list twice, doubled 60 times, would
  // otherwise write 2^60 values.
  void count(std::size_t text_bytes) {
    ++values_;
    text_bytes_ += text_bytes;
    if (values_ > kMaxValues)
      throw input_error(
          "more than 1,000,000 values (a scenario holds a few hundred; a list or dict "
          "reached several times counts each time)");
    if (text_bytes_ > kMaxTextBytes)
      throw input_error(
          fmt::format("more than {} MiB of text (the most a scenario file may hold)", kMaxTextBytes >> 20));
  }

  std::string integer_text(PyObject* integer) {
    // int's own repr (not a subclass's __str__); Python refuses ints of
    // more than 4,300 digits (sys.set_int_max_str_digits).
    const py::object text = steal(PyLong_Type.tp_repr(integer));
    if (!text)
      throw input_error(fmt::format("an integer that cannot be written ({})", take_python_error()));
    const auto digits = utf8(text.ptr());
    count(digits ? digits->size() : 0);
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
    count(out.size());
    return out;
  }

  // Checks `value` and, when `out` is given, writes it there.
  void node(PyObject* value, YAML::Node* out) {
    count(0);
    if (value == Py_None) {
      if (out)
        *out = YAML::Node(YAML::NodeType::Null);
    } else if (PyBool_Check(value)) {
      if (out)
        *out = YAML::Node(value == Py_True ? "true" : "false");
    } else if (PyDict_Check(value) || PyList_Check(value) || PyTuple_Check(value)) {
      container(value, out);
    } else if (auto text = scalar_text(value)) {
      if (out)
        *out = YAML::Node(*text);
    } else {
      throw unsupported(value);
    }
  }

  void container(PyObject* value, YAML::Node* out) {
    const bool is_dict = PyDict_Check(value);
    const char* kind = is_dict ? "dict" : PyList_Check(value) ? "list" : "tuple";
    for (std::size_t i = 0; i < open_.size(); ++i)
      if (open_[i].object == value)
        throw input_error(fmt::format("refers to itself (it is the {} at {}, which holds it)", kind,
                                      shown_path(open_[i].path_size)));
    if (open_.size() >= kMaxNestingLevels)
      throw input_error(
          fmt::format("nested more than {} levels (a scenario nests a few)", kMaxNestingLevels));
    open_.push_back({value, path_.size()});
    if (is_dict)
      dict(value, out);
    else
      sequence(value, out);
    open_.pop_back();
  }

  void dict(PyObject* value, YAML::Node* out) {
    // A copy of the items: the values' conversions cannot change what is
    // being iterated.
    const py::object items = steal(PyDict_Items(value));
    if (!items)
      throw py::error_already_set();
    if (out)
      *out = YAML::Node(YAML::NodeType::Map);
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
      count(key_text->size());
      path_.push_back(shown_key(key));
      YAML::Node child;
      node(PyTuple_GET_ITEM(item, 1), out ? &child : nullptr);
      path_.pop_back();
      // Keys of a dict are distinct: no look-up (node[key] is linear).
      if (out)
        out->force_insert(std::string(*key_text), child);
    }
  }

  void sequence(PyObject* value, YAML::Node* out) {
    const py::object items =
        PyTuple_Check(value) ? py::reinterpret_borrow<py::object>(value) : steal(PyList_AsTuple(value));
    if (!items)
      throw py::error_already_set();
    if (out)
      *out = YAML::Node(YAML::NodeType::Sequence);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items.ptr()); ++i) {
      path_.push_back(fmt::format("[{}]", i));
      YAML::Node child;
      node(PyTuple_GET_ITEM(items.ptr(), i), out ? &child : nullptr);
      path_.pop_back();
      if (out)
        out->push_back(child);
    }
  }

  struct Open {
    PyObject* object;
    std::size_t path_size;  // the length of the path that leads to it
  };
  const std::string& where_;
  std::vector<std::string> path_;
  std::vector<Open> open_;  // the containers on the path, outermost first
  std::size_t values_ = 0;
  std::size_t text_bytes_ = 0;
};

}  // namespace

YAML::Node yaml_from_python(py::handle value, const std::string& where) {
  return Converter(where).convert(value.ptr());
}

namespace {

// Whether a str holds what yaml-cpp would write raw although a YAML 1.1
// reader (PyYAML, for one) takes it for a line break or a control: NEL and
// the other C1 controls, LINE and PARAGRAPH SEPARATOR.
bool needs_escapes(std::string_view s) {
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]), d = static_cast<unsigned char>(s[i + 1]);
    if (c == 0xC2 && d >= 0x80 && d <= 0x9F)
      return true;
    if (c == 0xE2 && d == 0x80 && i + 2 < s.size() &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9))
      return true;
  }
  return false;
}

// The node through the emitter one event at a time, so that such a scalar
// can be written double-quoted with its non-ASCII escaped.
void write(YAML::Emitter& out, const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      if (needs_escapes(node.Scalar()))
        out << YAML::EscapeNonAscii << YAML::DoubleQuoted;
      out << node.Scalar();
      break;
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : node)
        write(out, item);
      out << YAML::EndSeq;
      break;
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& item : node) {
        out << YAML::Key;
        write(out, item.first);
        out << YAML::Value;
        write(out, item.second);
      }
      out << YAML::EndMap;
      break;
    default:
      out << YAML::Null;
  }
}

}  // namespace

std::string emit_yaml(const YAML::Node& node, bool flow) {
  YAML::Emitter out;
  if (flow) {
    out.SetMapFormat(YAML::Flow);
    out.SetSeqFormat(YAML::Flow);
  }
  write(out, node);
  if (!out.good())
    throw std::logic_error("cannot write YAML: " + out.GetLastError());
  return std::string(out.c_str(), out.size()) + (flow ? "" : "\n");
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
    text = emit_yaml(converter.convert(v), true);
  else if (auto scalar = converter.scalar_text(v))
    text = *scalar;
  else
    throw converter.unsupported(v);
  return std::string(*key_text) + "=" + text;
}

}  // namespace trainsim::python
