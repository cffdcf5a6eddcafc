// Fuzz target: the converter behind Scenario.from_dict and with_
// (python/src/python_to_yaml), in an embedded CPython. The input is a small
// program that builds Python objects on a stack, one operation per byte
// (what the byte is modulo 18, then its operands):
//
//    0 None              1 bool (1 byte)        2 int8 (1)            3 int64 (8)
//    4 10**n, n < 6000 (2; odd n negative)      5 float from 8 raw bytes (NaN payloads, inf, -0.0, denormals)
//    6 str of n UTF-16 code units (1 + 2n; lone surrogates, NUL, controls)
//    7 str of n bytes decoded as UTF-8 with surrogateescape (1 + n)
//    8 a word: scenario keys and YAML's own syntax ("~", "null", "- a", "&x", "!!python/object", "\u2028",
//    ...) (1) 9 list of the top k (1)    10 tuple of the top k (1)    11 dict of the top 2k, key then value
//    (1)
//   12 the top container holds itself (a cycle)
//   13 the container at depth i of the stack holds the top (1; a cycle when the top holds it)
//   14 the top wrapped in n lists or dicts (2; n up to 1,000, or 100,000 lists for 0xFF00 and above)
//   15 an odd object (1): set, bytes, object(), complex, int / float / str / list / dict subclasses whose
//      __repr__, __str__ or __iter__ raise, __index__ objects that raise, return a huge int or empty a list
//   16 [top, top] (shared: doubling it 60 times reaches 2^60 values)
//   17 duplicate the top
//
// The top of the stack is then converted as a document (from_dict) in
// block and flow style and as the value of an override (with_). Each
// must return or raise platforms::InputError or pybind11::type_error, and
// the YAML it returns must read back through yaml-cpp as the value itself
// (an oracle in this file re-derives each scalar's text: no str the
// emitter writes so that it reads as another, no key lost). Anything else escaping, a
// Python error left set, a crash or a sanitizer report is a finding.
// Under AddressSanitizer the embedded interpreter's own allocations are
// never freed (no Py_Finalize): leak detection is off for this target
// (__asan_default_options below, and detect_leaks=0 from scripts/fuzz and
// the replay test).
#include <pybind11/embed.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "platforms/input_error.hpp"
#include "python/src/python_to_yaml.hpp"

namespace py = pybind11;
using namespace std::literals;

namespace {

const std::string_view kWords[] = {"plan"sv,
                                   "model"sv,
                                   "cluster"sv,
                                   "tp"sv,
                                   "pp"sv,
                                   "dp"sv,
                                   "name"sv,
                                   "preset"sv,
                                   "nodes"sv,
                                   "perturbations"sv,
                                   ""sv,
                                   " "sv,
                                   "~"sv,
                                   "null"sv,
                                   "Null"sv,
                                   "NULL"sv,
                                   "true"sv,
                                   "True"sv,
                                   "false"sv,
                                   "yes"sv,
                                   "no"sv,
                                   "on"sv,
                                   "off"sv,
                                   "y"sv,
                                   "n"sv,
                                   "0"sv,
                                   "-0"sv,
                                   "0x1F"sv,
                                   "0o17"sv,
                                   "1e3"sv,
                                   ".inf"sv,
                                   "-.inf"sv,
                                   ".nan"sv,
                                   "1_000"sv,
                                   "12:30"sv,
                                   "2001-12-14"sv,
                                   "- a"sv,
                                   "a: b"sv,
                                   ": "sv,
                                   "#"sv,
                                   "# x"sv,
                                   "&a"sv,
                                   "*a"sv,
                                   "!"sv,
                                   "!!str"sv,
                                   "!!python/object:os.system"sv,
                                   "---"sv,
                                   "..."sv,
                                   "'"sv,
                                   "\""sv,
                                   "'a'"sv,
                                   "\"a\""sv,
                                   "{"sv,
                                   "}"sv,
                                   "["sv,
                                   "]"sv,
                                   ","sv,
                                   "? x"sv,
                                   "|"sv,
                                   ">"sv,
                                   "%YAML 1.2"sv,
                                   "@"sv,
                                   "`"sv,
                                   "\t"sv,
                                   "\n"sv,
                                   "\r\n"sv,
                                   " a"sv,
                                   "a "sv,
                                   "a\n b"sv,
                                   "\xc2\x85"sv,
                                   "\xe2\x80\xa8"sv,
                                   "\xe2\x80\xa9"sv,
                                   "\xef\xbb\xbf"sv,
                                   "\xef\xbf\xbe"sv,
                                   "\xf0\x9f\x98\x80"sv,
                                   "\\"sv,
                                   "\\x00"sv,
                                   "%"sv,
                                   "="sv,
                                   "plan.tp"sv,
                                   "400Gbps"sv,
                                   "auto"sv,
                                   "<<"sv,
                                   "a\0b"sv};

// Objects Python code makes once: index i of `odd`. `victim` is a list an
// __index__ empties while the converter may be iterating it.
const char* const kOddObjects = R"(
import collections
victim = [1, 2, 3]
class BadRepr(float):
    def __repr__(self): raise RuntimeError("repr")
class BadStr(int):
    def __str__(self): raise RuntimeError("str")
    __repr__ = __str__
class StrSub(str):
    def __repr__(self): raise RuntimeError("repr")
class ListSub(list):
    def __iter__(self): raise RuntimeError("iter")
class DictSub(dict):
    def items(self): raise RuntimeError("items")
    def __iter__(self): raise RuntimeError("iter")
class IndexRaises:
    def __index__(self): raise RuntimeError("index")
class IndexHuge:
    def __index__(self): return 10 ** 5000
class IndexEmpties:
    def __index__(self):
        victim.clear()
        return 7
class IndexWrong:
    def __index__(self): return "seven"
odd = [set(), {1, 2}, frozenset(), b"x", bytearray(b"y"), object(), complex(1, 2), BadRepr(1.5), BadStr(3),
       StrSub("s\ud800"), ListSub([1, 2]), DictSub(a=1), IndexRaises(), IndexHuge(), IndexEmpties(),
       IndexWrong(), victim, collections.OrderedDict(b=2), range(3), Ellipsis, float("nan"), float("-inf"),
       int, len, collections, 2 ** 63, -(2 ** 64), 10 ** 4300, True, StrSub("plain"), BadStr(-1)]
)";

struct Input {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;
  bool done() const { return at >= size; }
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
  void bytes(void* out, std::size_t n) {
    auto* o = static_cast<std::uint8_t*>(out);
    for (std::size_t i = 0; i < n; ++i)
      o[i] = byte();
  }
};

py::object steal_or_none(PyObject* p) {
  if (!p) {
    PyErr_Clear();
    return py::none();
  }
  return py::reinterpret_steal<py::object>(p);
}

bool is_container(const py::handle& o) {
  return PyList_Check(o.ptr()) || PyDict_Check(o.ptr());
}

// `into` holds `item` (appended to a list, under key "k" in a dict).
void hold(const py::handle& into, const py::handle& item) {
  if (PyList_Check(into.ptr()))
    PyList_Append(into.ptr(), item.ptr());
  else if (PyDict_Check(into.ptr()))
    PyDict_SetItemString(into.ptr(), "k", item.ptr());
  PyErr_Clear();
}

py::object build(Input& in, const py::list& odd) {
  std::vector<py::object> stack;
  constexpr std::size_t kMaxStack = 64;
  const auto push = [&](py::object o) {
    if (stack.size() < kMaxStack)
      stack.push_back(std::move(o));
  };
  const auto pop = [&]() {
    py::object o = std::move(stack.back());
    stack.pop_back();
    return o;
  };
  while (!in.done()) {
    const int op = in.byte() % 18;
    switch (op) {
      case 0:
        push(py::none());
        break;
      case 1:
        push(py::bool_(in.byte() & 1));
        break;
      case 2:
        push(py::int_(static_cast<std::int8_t>(in.byte())));
        break;
      case 3: {
        std::int64_t v = 0;
        in.bytes(&v, sizeof v);
        push(steal_or_none(PyLong_FromLongLong(v)));
        break;
      }
      case 4: {
        const unsigned n = (in.byte() | (in.byte() << 8)) % 6000;
        py::object p = steal_or_none(PyNumber_Power(py::int_(10).ptr(), py::int_(n).ptr(), Py_None));
        push(n % 2 ? steal_or_none(PyNumber_Negative(p.ptr())) : p);
        break;
      }
      case 5: {
        double v = 0;
        in.bytes(&v, sizeof v);
        push(py::float_(v));
        break;
      }
      case 6: {
        const std::size_t n = in.byte();
        std::vector<std::uint16_t> units(n);
        for (auto& u : units)
          u = static_cast<std::uint16_t>(in.byte() | (in.byte() << 8));
        push(steal_or_none(
            PyUnicode_FromKindAndData(PyUnicode_2BYTE_KIND, units.data(), static_cast<Py_ssize_t>(n))));
        break;
      }
      case 7: {
        const std::size_t n = in.byte();
        std::string bytes(n, '\0');
        in.bytes(bytes.data(), n);
        push(
            steal_or_none(PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(n), "surrogateescape")));
        break;
      }
      case 8: {
        const std::string_view word = kWords[in.byte() % std::size(kWords)];
        push(
            steal_or_none(PyUnicode_DecodeUTF8(word.data(), static_cast<Py_ssize_t>(word.size()), "strict")));
        break;
      }
      case 9:
      case 10:
      case 11: {
        const std::size_t k = in.byte() % 8;
        const std::size_t take = std::min(stack.size(), k);
        std::vector<py::object> items(stack.end() - static_cast<std::ptrdiff_t>(take), stack.end());
        stack.resize(stack.size() - take);
        if (op == 9 || op == 10) {
          py::list list;
          for (auto& item : items)
            list.append(item);
          push(op == 9 ? py::object(list) : py::object(py::tuple(list)));
        } else {
          py::dict dict;
          for (std::size_t i = 0; i + 1 < items.size(); i += 2)
            if (PyDict_SetItem(dict.ptr(), items[i].ptr(), items[i + 1].ptr()) != 0)
              PyErr_Clear();  // an unhashable key
          push(dict);
        }
        break;
      }
      case 12:
        if (!stack.empty())
          hold(stack.back(), stack.back());
        break;
      case 13: {
        const std::size_t i = in.byte();
        if (!stack.empty()) {
          const auto& into = stack[i % stack.size()];
          if (is_container(into))
            hold(into, stack.back());
        }
        break;
      }
      case 14: {
        // Up to 1,000 levels (the converter stops at 65; deeper only costs
        // time), 100,000 for an operand from 0xFF00 (the issue's list).
        const unsigned v = in.byte() | (in.byte() << 8);
        const unsigned n = v >= 0xFF00 ? 100'000 : (v >> 1) % 1'001;
        const bool dicts = v < 0xFF00 && (v & 1);
        if (stack.empty())
          push(py::none());
        py::object o = pop();
        for (unsigned j = 0; j < n; ++j) {
          if (dicts) {
            py::dict d;
            d["k"] = o;
            o = d;
          } else {
            py::list l;
            l.append(o);
            o = l;
          }
        }
        push(o);
        break;
      }
      case 15:
        push(odd[in.byte() % py::len(odd)]);
        break;
      case 16:
        if (!stack.empty()) {
          py::object o = pop();
          py::list l;
          l.append(o);
          l.append(o);
          push(l);
        }
        break;
      case 17:
        if (!stack.empty())
          push(stack.back());
        break;
    }
  }
  return stack.empty() ? py::none() : stack.back();
}

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "python_dict: %s\n", what.c_str());
  std::abort();
}

std::string utf8_of(PyObject* s) {
  Py_ssize_t n = 0;
  const char* c = PyUnicode_AsUTF8AndSize(s, &n);
  return c ? std::string(c, static_cast<std::size_t>(n)) : std::string();
}

// The oracle: whether `node` (the YAML read back) is `value` written by the
// converter's rules: None as null, bools as true / false, ints and floats
// as Python's repr, str as its UTF-8, dicts and lists in order. Called
// only on what the converter accepted.
bool same(PyObject* value, const YAML::Node& node) {
  if (value == Py_None)
    return node.IsNull();
  if (PyBool_Check(value))
    return node.IsScalar() && node.Scalar() == (value == Py_True ? "true" : "false");
  if (PyDict_Check(value)) {
    const py::object items = py::reinterpret_steal<py::object>(PyDict_Items(value));
    if (!node.IsMap() || node.size() != static_cast<std::size_t>(PyList_GET_SIZE(items.ptr())))
      return false;
    auto it = node.begin();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.ptr()); ++i, ++it) {
      PyObject* item = PyList_GET_ITEM(items.ptr(), i);
      if (!it->first.IsScalar() || it->first.Scalar() != utf8_of(PyTuple_GET_ITEM(item, 0)) ||
          !same(PyTuple_GET_ITEM(item, 1), it->second))
        return false;
    }
    return true;
  }
  if (PyList_Check(value) || PyTuple_Check(value)) {
    // The elements themselves, as the converter takes them (a list
    // subclass's __iter__ is not asked).
    const py::object items = PyTuple_Check(value) ? py::reinterpret_borrow<py::object>(value)
                                                  : py::reinterpret_steal<py::object>(PyList_AsTuple(value));
    if (!items) {
      PyErr_Clear();
      return false;
    }
    if (!node.IsSequence() || node.size() != static_cast<std::size_t>(PyTuple_GET_SIZE(items.ptr())))
      return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items.ptr()); ++i)
      if (!same(PyTuple_GET_ITEM(items.ptr(), i), node[i]))
        return false;
    return true;
  }
  if (!node.IsScalar())
    return false;
  if (PyUnicode_Check(value))
    return node.Scalar() == utf8_of(value);
  if (PyFloat_Check(value)) {
    char* text = PyOS_double_to_string(PyFloat_AS_DOUBLE(value), 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
    const bool equal = node.Scalar() == text;
    PyMem_Free(text);
    return equal;
  }
  py::object integer = py::reinterpret_steal<py::object>(PyNumber_Index(value));
  if (!integer) {
    PyErr_Clear();
    return false;
  }
  const py::object text = py::reinterpret_steal<py::object>(PyLong_Type.tp_repr(integer.ptr()));
  return text && node.Scalar() == utf8_of(text.ptr());
}

void reads_back(PyObject* value, const std::string& text, const char* how) {
  YAML::Node back;
  try {
    back = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    finding(std::string(how) + " YAML does not parse: " + e.what() + "\n" + text);
  }
  if (!same(value, back))
    finding(std::string(how) + " YAML reads back as another value:\n" + text);
  if (PyErr_Occurred())
    finding("the oracle left a Python error set");
}

}  // namespace

// The embedded interpreter is never finalised (Py_Finalize in a fuzzer's
// atexit would race its last input), so LeakSanitizer would report what it
// keeps at exit: off by default for this target only. ASAN_OPTIONS, when
// set, still wins (the replay test sets detect_leaks=0 there too).
extern "C" const char* __asan_default_options() {
  return "detect_leaks=0";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const py::list odd = [] {
    py::initialize_interpreter();
    py::dict scope;
    py::exec(kOddObjects, scope);
    return scope["odd"].cast<py::list>();
  }();
  Input in{data, size};
  const py::object document = build(in, odd);
  if (PyErr_Occurred())
    finding("the builder left a Python error set");  // the target's own bug
  // A document near the caps (16 MiB of YAML: a list doubled 17 times is
  // 262,143 values) takes about 0.7 s to write without sanitizers; it is
  // written once, and the flow style, the override and the read-back run
  // on small ones only, whose scalars and shapes are the same.
  bool small = true;
  try {
    const std::string block = trainsim::python::yaml_from_python(document, "<fuzz>");
    small = block.size() <= 65536;
    if (small) {
      reads_back(document.ptr(), block, "block");
      reads_back(document.ptr(), trainsim::python::yaml_from_python(document, "<fuzz>", true), "flow");
    }
  } catch (const trainsim::platforms::InputError&) {
  } catch (const py::type_error&) {
  }
  if (PyErr_Occurred())
    finding("the converter left a Python error set");
  if (small) {
    try {
      (void)trainsim::python::override_from_python(py::str("plan.x"), document, "with_");
    } catch (const trainsim::platforms::InputError&) {
    } catch (const py::type_error&) {
    }
    if (PyErr_Occurred())
      finding("the override converter left a Python error set");
  }
  return 0;
}
