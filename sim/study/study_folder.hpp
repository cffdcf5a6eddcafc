#pragma once
// A study's folder holds one study. When a sweep (or compare, or merge)
// completes, what an earlier, different study left there goes: the point
// folders this study does not have (an earlier study of 8 points left
// points/0004..0007 beside a new one of 4), the plots it does not draw and
// a report.html it did not write. Nothing is removed before the run
// completes, so an interrupted study keeps every finished point and resumes
// exactly (sim/study/point_runner.hpp); docs/studies.md, "Choices".
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace trainsim::sim {

// Removes the point folders directly under `root` whose name is not in
// `ids`, and every leftover `<id>.partial` folder. A folder counts as a
// point's only when it holds the scenario.yaml the point runner writes
// first, so a folder of the user's own under --out is never touched.
// Returns the names removed, sorted.
std::vector<std::string> remove_other_points(const std::filesystem::path& root,
                                             const std::set<std::string>& ids);

// Removes the SVG files of dir/plots/ not in `written`, and dir/report.html
// unless `html` (it would show the earlier study). Returns what it removed.
std::vector<std::filesystem::path> remove_stale_study_files(const std::filesystem::path& dir,
                                                            const std::vector<std::filesystem::path>& written,
                                                            bool html);

// "removed 4 point folders of an earlier study (0004, 0005, 0006, 0007)", or
// "" when none were removed.
std::string describe_removed_points(const std::vector<std::string>& removed);

}  // namespace trainsim::sim
