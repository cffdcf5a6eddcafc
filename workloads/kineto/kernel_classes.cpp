#include "workloads/kineto/kernel_classes.hpp"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "platforms/input_error.hpp"
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"
#include "workloads/kineto/embedded_kernel_classes.hpp"

namespace trainsim::kineto {

std::string_view to_string(KernelRole role) {
  switch (role) {
    case KernelRole::gemm:
      return "gemm";
    case KernelRole::attention:
      return "attention";
    case KernelRole::memory:
      return "memory";
    case KernelRole::compute:
      return "compute";
    case KernelRole::copy:
      return "copy";
    case KernelRole::communication:
      return "communication";
  }
  return "compute";
}

namespace {

// A kernel name is searched by every pattern of a class; a class's patterns
// are few and short, and std::regex_search walks the name once per pattern.
bool matches(const KernelClass& c, std::string_view name) {
  for (const auto& re : c.regexes)
    if (std::regex_search(name.begin(), name.end(), re))
      return true;
  return false;
}

std::optional<KernelClass> read_class(platforms::MapReader m, std::set<std::string>& names) {
  const std::size_t before = m.error_count();
  KernelClass c;
  if (auto name = m.label("name")) {
    c.name = *name;
    if (!names.insert(c.name).second)
      m.error("name", fmt::format("'{}' is given twice (expected one entry per class)", c.name));
  } else if (!m.has("name")) {
    m.error("name", "missing (a class needs a name, for example \"name: gemm\")");
  }
  if (auto role = m.choice<KernelRole>("role", {{"gemm", KernelRole::gemm},
                                                {"attention", KernelRole::attention},
                                                {"memory", KernelRole::memory},
                                                {"compute", KernelRole::compute},
                                                {"copy", KernelRole::copy},
                                                {"communication", KernelRole::communication}}))
    c.role = *role;
  else if (!m.has("role"))
    m.error("role", "missing (one of gemm, attention, memory, compute, copy, communication)");
  if (auto d = m.text("description"))
    c.description = *d;
  m.accept("patterns");
  const YAML::Node patterns = m.node()["patterns"];
  if (!patterns) {
    m.error("patterns", "missing (a list of regular expressions, for example ['gemm', '^Cijk_'])");
  } else if (!patterns.IsSequence() || patterns.size() == 0) {
    m.error("patterns", fmt::format("{} is not a list of regular expressions (expected, for example, "
                                    "['gemm', '^Cijk_'])",
                                    platforms::describe_yaml_value(patterns)));
  } else {
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      const YAML::Node p = patterns[i];
      const std::string key = fmt::format("patterns.{}", i);
      if (!p.IsScalar()) {
        m.error(key, fmt::format("{} is not a regular expression (expected text such as 'gemm')",
                                 platforms::describe_yaml_value(p)));
        continue;
      }
      try {
        c.regexes.emplace_back(p.Scalar(), std::regex::ECMAScript | std::regex::optimize);
        c.patterns.push_back(p.Scalar());
      } catch (const std::regex_error& e) {
        m.error(key, fmt::format("'{}' is not a regular expression ({}; expected ECMAScript syntax)",
                                 p.Scalar(), e.what()));
      }
    }
  }
  m.finish();
  if (m.error_count() != before)
    return std::nullopt;
  return c;
}

}  // namespace

KernelClassTable KernelClassTable::parse(std::string_view yaml_text, const std::string& source) {
  const YAML::Node root = platforms::load_yaml_document(std::string(yaml_text), source);
  if (!root.IsMap())
    throw platforms::InputError({fmt::format(
        "{}: expected a map with `classes`, a list of kernel classes (name, role, patterns)", source)});
  const platforms::InputSource input(source);
  platforms::ErrorList errors;
  platforms::MapReader top(root, "", input, errors);
  KernelClassTable table;
  table.source_ = source;
  std::set<std::string> names;
  if (auto list = top.map_list("classes")) {
    for (auto& m : *list)
      if (auto c = read_class(m, names))
        table.classes_.push_back(std::move(*c));
    if (list->empty())
      top.error("classes", "is empty (expected at least the catch-all class, patterns: [''])");
  } else if (!top.has("classes")) {
    top.error("classes", "missing (a list of kernel classes: name, role, patterns)");
  }
  top.finish();
  errors.throw_if_any();
  // The last class takes every name no other class matched: its patterns
  // must match any name, which the empty pattern does.
  if (!table.classes_.empty() && !(matches(table.classes_.back(), "") && matches(table.classes_.back(), "x")))
    throw platforms::InputError({fmt::format(
        "{}: classes: the last class, '{}', does not match every kernel name (expected a catch-all such "
        "as \"- {{name: other, role: compute, patterns: ['']}}\")",
        source, table.classes_.back().name)});
  return table;
}

const KernelClassTable& KernelClassTable::builtin() {
  static const KernelClassTable table = [] {
    const auto& file = embedded_kernel_class_files().at(0);
    return parse(file.text, std::string(file.path));
  }();
  return table;
}

int KernelClassTable::classify(std::string_view kernel_name) const {
  for (int i = 0; i + 1 < size(); ++i)
    if (matches(classes_[static_cast<std::size_t>(i)], kernel_name))
      return i;
  return size() - 1;
}

int KernelClassTable::find(std::string_view name) const {
  for (int i = 0; i < size(); ++i)
    if (classes_[static_cast<std::size_t>(i)].name == name)
      return i;
  return -1;
}

int KernelClassifier::classify(const std::string& kernel_name) {
  if (auto it = seen_.find(kernel_name); it != seen_.end())
    return it->second;
  const int c = table_->classify(kernel_name);
  seen_.emplace(kernel_name, c);
  return c;
}

}  // namespace trainsim::kineto
