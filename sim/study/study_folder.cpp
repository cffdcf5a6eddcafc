#include "sim/study/study_folder.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace trainsim::sim {
namespace fs = std::filesystem;

namespace {
constexpr std::string_view kPartial = ".partial";
}  // namespace

std::vector<std::string> remove_other_points(const fs::path& root, const std::set<std::string>& ids) {
  std::vector<std::string> removed;
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (!it->is_directory(e) || it->is_symlink(e) || !fs::is_regular_file(it->path() / "scenario.yaml", e))
      continue;
    const std::string name = it->path().filename().string();
    if (name.ends_with(kPartial) || ids.count(name) == 0)
      doomed.push_back(it->path());
  }
  for (const auto& path : doomed) {
    std::error_code e;
    fs::remove_all(path, e);
    const std::string name = path.filename().string();
    if (!e && !name.ends_with(kPartial))
      removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

std::vector<fs::path> remove_stale_study_files(const fs::path& dir, const std::vector<fs::path>& written,
                                               bool html) {
  std::vector<fs::path> removed;
  std::set<fs::path> keep(written.begin(), written.end());
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (fs::directory_iterator it(dir / "plots", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (it->is_regular_file(e) && it->path().extension() == ".svg" && keep.count(it->path()) == 0)
      doomed.push_back(it->path());
  }
  if (!html && fs::is_regular_file(dir / "report.html", ec))
    doomed.push_back(dir / "report.html");
  for (const auto& path : doomed)
    if (std::error_code e; fs::remove(path, e))
      removed.push_back(path);
  return removed;
}

std::string describe_removed_points(const std::vector<std::string>& removed) {
  if (removed.empty())
    return {};
  constexpr std::size_t kShown = 8;
  std::string list;
  for (std::size_t i = 0; i < removed.size() && i < kShown; ++i)
    list.append(list.empty() ? "" : ", ").append(removed[i]);
  if (removed.size() > kShown)
    list += fmt::format(" and {} more", removed.size() - kShown);
  return fmt::format("removed {} point folder{} of an earlier study that this one does not have ({})",
                     removed.size(), removed.size() == 1 ? "" : "s", list);
}

}  // namespace trainsim::sim
