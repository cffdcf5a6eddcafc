#include "sim/cli/validation_dataset.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"

namespace trainsim::cli {
namespace {

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos)
    return "";
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ','))
    cells.push_back(trim(cell));
  if (!line.empty() && line.back() == ',')
    cells.emplace_back();
  return cells;
}

// A measured iteration time: 1 us to 1e10 ms (about 115 days); a model of
// a thousandth of a billion to a million billion parameters.
constexpr double kMinMeasuredTime_ms = 1e-3;
constexpr double kMaxMeasuredTime_ms = 1e10;
constexpr double kMinParameters_billion = 1e-3;
constexpr double kMaxParameters_billion = 1e6;
constexpr double kMinMfu_percent = 1e-3;

// The vTrain column names, and where each goes.
enum class Column {
  parameters,
  gpus,
  global_batch,
  micro_batch,
  hidden,
  heads,
  layers,
  seq_len,
  tp,
  dp,
  pp,
  cp,
  virtual_stages,
  time,
  mfu,
  set
};

const std::map<std::string, Column>& known_columns() {
  static const std::map<std::string, Column> columns = {
      {"Parameters (billion)", Column::parameters},
      {"# GPUs", Column::gpus},
      {"global batch", Column::global_batch},
      {"micro batch", Column::micro_batch},
      {"hidden size", Column::hidden},
      {"attention heads", Column::heads},
      {"# layers", Column::layers},
      {"sequence length", Column::seq_len},
      {"tensor parallelism", Column::tp},
      {"data parallelism", Column::dp},
      {"pipeline parallelism", Column::pp},
      {"context parallelism", Column::cp},
      {"virtual stages", Column::virtual_stages},
      {"iteration time (ms)", Column::time},
      {"MFU (%)", Column::mfu},
      {"set", Column::set},
  };
  return columns;
}

}  // namespace

std::vector<ValidationRow> parse_validation_dataset(const std::string& text, const std::string& file) {
  platforms::ErrorList errors;
  std::vector<ValidationRow> rows;
  std::vector<Column> header;
  std::vector<std::string> header_names;
  std::stringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0)  // UTF-8 byte-order mark
      line.erase(0, 3);
    if (trim(line).empty())
      continue;
    const auto cells = split_csv_line(line);
    // '#' starts a comment, except on vTrain's header line whose first
    // column is "# GPUs".
    if (trim(line)[0] == '#' && !(header.empty() && known_columns().count(cells.front())))
      continue;
    if (header.empty()) {
      std::string expected;
      for (const auto& [known, column] : known_columns())
        expected += (expected.empty() ? "'" : ", '") + known + "'";
      // A column given twice would have its last value win, silently (an
      // unknown one is an error already).
      std::map<std::string, std::size_t> position;  // name -> its first column, 1-based
      for (const auto& name : cells) {
        const auto it = known_columns().find(name);
        if (it == known_columns().end())
          errors.add(fmt::format("{}:{}: unknown column '{}' (expected columns among {})", file, number, name,
                                 expected));
        const auto [first, fresh] = position.emplace(name, header_names.size() + 1);
        if (!fresh && it != known_columns().end())
          errors.add(
              fmt::format("{}:{}: column '{}' is given twice, as columns {} and {} (expected each "
                          "column once)",
                          file, number, name, first->second, header_names.size() + 1));
        header.push_back(it == known_columns().end() ? Column::set : it->second);
        header_names.push_back(name);
      }
      for (const auto& [name, column] : known_columns()) {
        if (column == Column::parameters || column == Column::set || column == Column::cp ||
            column == Column::virtual_stages || column == Column::mfu)
          continue;
        bool found = false;
        for (const auto& h : header_names)
          found = found || h == name;
        if (!found)
          errors.add(fmt::format("{}:{}: missing column '{}'", file, number, name));
      }
      if (!errors.empty())
        break;
      continue;
    }
    if (cells.size() != header.size()) {
      errors.add(fmt::format("{}:{}: {} cells, but the header has {} columns", file, number, cells.size(),
                             header.size()));
      continue;
    }
    ValidationRow row;
    row.line = number;
    const std::size_t before = errors.size();
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string& cell = cells[c];
      if (header[c] == Column::set) {
        if (cell != "fit" && cell != "check")
          errors.add(
              fmt::format("{}:{}: set: '{}' is not a row set (expected fit or check)", file, number, cell));
        row.set = cell;
        continue;
      }
      double value = 0;
      const auto [ptr, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
      const bool integer_column =
          header[c] != Column::parameters && header[c] != Column::time && header[c] != Column::mfu;
      // A count beyond an int (found by fuzzing: 1e124 GPUs) would overflow
      // the conversion below; infinity would pass `> 0`. A measured time
      // is a normal number in a range a training iteration can take (4e-320,
      // a subnormal, once printed `MAPE inf`); so is a parameter count.
      constexpr double kMaxCount = std::numeric_limits<int>::max();
      const bool read = ec == std::errc() && ptr == cell.data() + cell.size();
      if (integer_column && (!read || !(value > 0) || !std::isfinite(value) || std::floor(value) != value ||
                             value > kMaxCount)) {
        errors.add(fmt::format("{}:{}: {}: '{}' is not a whole number between 1 and 2147483647", file, number,
                               header_names[c], cell));
        continue;
      }
      const bool time = header[c] == Column::time;
      const bool mfu = header[c] == Column::mfu;
      const double min = time ? kMinMeasuredTime_ms : mfu ? kMinMfu_percent : kMinParameters_billion;
      const double max = time ? kMaxMeasuredTime_ms : mfu ? 100.0 : kMaxParameters_billion;
      if (!integer_column && (!read || !std::isnormal(value) || value < min || value > max)) {
        errors.add(fmt::format("{}:{}: {}: '{}' is not a number from {:g} to {:g}{}", file, number,
                               header_names[c], cell, min, max,
                               time  ? " (1 us to about 115 days, in milliseconds)"
                               : mfu ? " (percent of the GPUs' peak)"
                                     : " (billion parameters)"));
        continue;
      }
      const int n = integer_column ? static_cast<int>(value) : 0;
      switch (header[c]) {
        case Column::parameters:
          row.parameters_billion = value;
          break;
        case Column::gpus:
          row.gpus = n;
          break;
        case Column::global_batch:
          row.global_batch = n;
          break;
        case Column::micro_batch:
          row.micro_batch = n;
          break;
        case Column::hidden:
          row.hidden = n;
          break;
        case Column::heads:
          row.heads = n;
          break;
        case Column::layers:
          row.layers = n;
          break;
        case Column::seq_len:
          row.seq_len = n;
          break;
        case Column::tp:
          row.tp = n;
          break;
        case Column::dp:
          row.dp = n;
          break;
        case Column::pp:
          row.pp = n;
          break;
        case Column::cp:
          row.cp = n;
          break;
        case Column::virtual_stages:
          row.virtual_stages = n;
          break;
        case Column::time:
          row.measured_ms = value;
          break;
        case Column::mfu:
          row.measured_mfu_percent = value;
          break;
        case Column::set:
          break;
      }
    }
    // In double: each count fits an int, their product need not (exact up to
    // 2^53, and anything above cannot equal an int count).
    const double product = double(row.tp) * double(row.dp) * double(row.pp) * double(std::max(row.cp, 1));
    if (errors.size() == before && product != row.gpus)
      errors.add(
          row.cp == 0
              ? fmt::format("{}:{}: tensor x data x pipeline parallelism = {} x {} x {} = {:.0f}, but # "
                            "GPUs is {}",
                            file, number, row.tp, row.dp, row.pp, product, row.gpus)
              : fmt::format("{}:{}: tensor x data x pipeline x context parallelism = {} x {} x {} x {} = "
                            "{:.0f}, but # GPUs is {}",
                            file, number, row.tp, row.dp, row.pp, row.cp, product, row.gpus));
    rows.push_back(row);
  }
  if (header.empty() && errors.empty())
    errors.add(fmt::format("{}: no header line (expected vTrain's CSV columns)", file));
  else if (rows.empty() && errors.empty())
    errors.add(fmt::format("{}: no data rows", file));
  errors.throw_if_any();
  return rows;
}

std::vector<ValidationRow> read_validation_dataset(const std::string& path) {
  return parse_validation_dataset(platforms::read_input_file(path, "dataset", platforms::kMaxTableInputBytes),
                                  path);
}

}  // namespace trainsim::cli
