// Docs that are tested: every `sh` and `yaml` block of README.md and
// docs/*.md runs here, one test per block, so an example cannot rot.
//
// A `sh` block runs with bash (errexit, pipefail) in a sandbox folder that
// looks like the repository: scenarios/, platforms/, tests/, docs/ and
// scripts/ link to the real ones, `build/trainsim` is the binary under test,
// and outputs go to the sandbox. A `yaml` block is a scenario: run with
// `trainsim run` (a study file with `sweep` with `trainsim sweep`, with only
// `variants` with `trainsim compare`); a fragment without a cluster, model or
// plan section is laid over a base scenario first (maps merge, other values
// replace), scenarios/quickstart.yaml unless told otherwise.
//
// How an example is run is said next to it, in an HTML comment on the line
// before its fence (invisible on GitHub), directives separated by ";":
//   <!-- docs-test: base scenarios/moe-mixtral.yaml; args --set plan.tp=4 -->
//   base FILE            yaml: the scenario a fragment is laid over
//   args ARGS            yaml: more arguments for its command
//   add SUBCOMMAND ARGS  sh: more arguments for every `trainsim SUBCOMMAND`
//                        of the block (shrinking it: --top 2, --only ...)
//   replace A => B       the block's text with A replaced by B first
//   file NAME            this block is the file NAME for later blocks of the
//                        same page; not run on its own
//   needs NAME           the file NAME (a `file` block of the page, or a path
//                        of the repository given as NAME=PATH) in the sandbox
//   before COMMAND       a shell command run in the sandbox first
//   fails STATUS         the example shows an error: its last command must
//                        exit with STATUS (and an earlier one not fail)
//   skip REASON          not run (the test says why)
// In the sandbox, `scripts/setup` and `scripts/test` (the build and the suite
// that runs this very test), `cmake` and `ctest` print what they would do
// and succeed; `sbatch SCRIPT` runs SCRIPT once per index of its `#SBATCH
// --array`, one after the other, with SLURM_ARRAY_TASK_ID and
// SLURM_CPUS_PER_TASK set.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/files.hpp"

namespace trainsim::testing {
namespace {

namespace fs = std::filesystem;

struct Block {
  std::string page;      // "README.md", "docs/plan_search.md"
  int line = 0;          // of the opening fence
  std::string language;  // "sh" or "yaml"
  std::string text;
  std::string directives;  // the docs-test comment before the fence, if any
};

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.erase(s.begin());
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  return s;
}

std::vector<Block> blocks_of(const std::string& page) {
  std::vector<Block> out;
  std::ifstream in(fs::path(TRAINSIM_SOURCE_DIR) / page);
  std::string line, previous, language, text, directives;
  int number = 0, start = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    ++number;
    const std::string t = trim(line);
    if (t.rfind("```", 0) == 0) {
      if (!inside) {
        inside = true;
        language = t.substr(3);
        start = number;
        text.clear();
        directives.clear();
        static const std::regex comment(R"(^<!--\s*docs-test:(.*)-->$)");
        std::smatch m;
        if (std::regex_match(previous, m, comment))
          directives = trim(m[1]);
      } else {
        inside = false;
        if (language == "sh" || language == "yaml")
          out.push_back({page, start, language, text, directives});
      }
    } else if (inside) {
      text += line + "\n";
    }
    if (!t.empty())
      previous = t;
  }
  return out;
}

std::vector<Block> every_block() {
  std::vector<std::string> pages{"README.md"};
  std::vector<std::string> docs;
  for (const auto& entry : fs::directory_iterator(fs::path(TRAINSIM_SOURCE_DIR) / "docs"))
    if (entry.path().extension() == ".md")
      docs.push_back("docs/" + entry.path().filename().string());
  std::sort(docs.begin(), docs.end());
  pages.insert(pages.end(), docs.begin(), docs.end());
  std::vector<Block> all;
  for (const auto& p : pages) {
    auto b = blocks_of(p);
    all.insert(all.end(), b.begin(), b.end());
  }
  return all;
}

// "add sweep --only x=1" -> {"add", "sweep --only x=1"}.
std::vector<std::pair<std::string, std::string>> directives_of(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream s(text);
  for (std::string part; std::getline(s, part, ';');) {
    part = trim(part);
    if (part.empty())
      continue;
    const auto space = part.find(' ');
    out.emplace_back(part.substr(0, space), space == std::string::npos ? "" : trim(part.substr(space + 1)));
  }
  return out;
}

// Maps merge key by key; anything else replaces.
void overlay(YAML::Node into, const YAML::Node& top) {
  for (const auto& kv : top) {
    const auto key = kv.first.Scalar();
    if (into[key] && into[key].IsMap() && kv.second.IsMap())
      overlay(into[key], kv.second);
    else
      into[key] = YAML::Clone(kv.second);
  }
}

void write_file(const fs::path& path, const std::string& text, bool executable = false) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  if (executable)
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
}

// The sandbox: a folder that looks like the repository, with build/trainsim
// adding each subcommand's extra arguments.
fs::path make_sandbox(const std::string& name, const std::map<std::string, std::string>& extra) {
  const fs::path dir = fresh_dir("docs-" + name);
  const fs::path source(TRAINSIM_SOURCE_DIR);
  for (const char* d : {"scenarios", "platforms", "tests", "docs"})
    fs::create_directory_symlink(source / d, dir / d);
  fs::create_directories(dir / "scripts");
  for (const auto& entry : fs::directory_iterator(source / "scripts")) {
    const auto file = entry.path().filename().string();
    if (file == "setup" || file == "test")
      write_file(dir / "scripts" / file,
                 "#!/bin/sh\necho \"docs-test: scripts/" + file +
                     " not run here (it builds and runs the suite this test is part of)\"\n",
                 true);
    else
      fs::create_symlink(entry.path(), dir / "scripts" / file);
  }
  std::string wrapper =
      "#!/bin/bash\n# docs-test: the binary under test, with the extra arguments of the "
      "example's docs-test comment\ncase \"$1\" in\n";
  for (const auto& [sub, args] : extra)
    wrapper += "  " + sub + ") set -- \"$@\" " + args + " ;;\n";
  wrapper += "esac\nexec " + shell_quote(TRAINSIM_EXE) + " \"$@\"\n";
  write_file(dir / "build" / "trainsim", wrapper, true);
  // The Python module built beside the binary (docs/python.md imports it).
  if (const fs::path python = fs::path(TRAINSIM_EXE).parent_path() / "python"; fs::is_directory(python))
    fs::create_directory_symlink(python, dir / "build" / "python");
  const fs::path bin = dir / ".docs-test-bin";
  for (const char* tool : {"cmake", "ctest"})
    write_file(bin / tool, std::string("#!/bin/sh\necho \"docs-test: ") + tool + " $* (not run here)\"\n",
               true);
  write_file(bin / "sbatch",
             "#!/bin/bash\n# docs-test: runs the job array one index after the other\nset -e\n"
             "range=$(sed -n 's/^#SBATCH.*--array=\\([0-9]*-[0-9]*\\).*/\\1/p' \"$1\")\n"
             "for i in $(seq \"${range%-*}\" \"${range#*-}\"); do\n"
             "  SLURM_ARRAY_TASK_ID=$i SLURM_CPUS_PER_TASK=1 bash \"$1\"\ndone\n",
             true);
  return dir;
}

struct Outcome {
  int status = -1;
  std::string log;
};

Outcome run_in(const fs::path& dir, const std::string& script) {
  write_file(dir / ".docs-test-script.sh", script);
  const std::string cmd =
      "cd " + shell_quote(dir.string()) + " && PATH=" + shell_quote((dir / ".docs-test-bin").string()) +
      ":\"$PATH\" bash -e -o pipefail .docs-test-script.sh >.docs-test-log 2>&1 </dev/null";
  const int raw = std::system(cmd.c_str());
  Outcome o;
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  o.log = read_file(dir / ".docs-test-log");
  return o;
}

// Names the block in test output ("README.md:58"), not its bytes.
void PrintTo(const Block& block, std::ostream* os) {
  *os << block.page << ":" << block.line;
}

class DocExample : public ::testing::TestWithParam<Block> {};

TEST_P(DocExample, RunsAsWritten) {
  const Block& block = GetParam();
  std::string text = block.text;
  std::map<std::string, std::string> extra;
  std::vector<std::string> needs, before;
  std::string base = "scenarios/quickstart.yaml", args;
  int expected_status = 0;
  for (const auto& [name, value] : directives_of(block.directives)) {
    if (name == "skip")
      GTEST_SKIP() << value;
    if (name == "file")
      GTEST_SKIP() << "the file " << value << " of later examples";
    if (name == "add") {
      const auto space = value.find(' ');
      extra[value.substr(0, space)].append(" ").append(value.substr(space + 1));
    } else if (name == "replace") {
      const auto arrow = value.find(" => ");
      ASSERT_NE(arrow, std::string::npos) << "replace A => B: " << value;
      const std::string from = value.substr(0, arrow), to = value.substr(arrow + 4);
      ASSERT_NE(text.find(from), std::string::npos) << "nothing to replace: " << from;
      for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
        text.replace(at, from.size(), to);
    } else if (name == "needs") {
      needs.push_back(value);
    } else if (name == "before") {
      before.push_back(value);
    } else if (name == "fails") {
      expected_status = std::stoi(value);
    } else if (name == "base") {
      base = value;
    } else if (name == "args") {
      args += " " + value;
    } else {
      FAIL() << "unknown docs-test directive '" << name
             << "' (expected base, args, add, replace, file, needs, "
             << "before, fails or skip)";
    }
  }
  const std::string id = fs::path(block.page).stem().string() + "-" + std::to_string(block.line);
  const fs::path dir = make_sandbox(id, extra);
  for (const auto& need : needs) {
    const auto eq = need.find('=');
    if (eq != std::string::npos) {
      fs::copy_file(fs::path(TRAINSIM_SOURCE_DIR) / need.substr(eq + 1), dir / need.substr(0, eq));
      continue;
    }
    bool found = false;
    for (const auto& other : blocks_of(block.page))
      for (const auto& [name, value] : directives_of(other.directives))
        if (name == "file" && value == need) {
          write_file(dir / need, other.text);
          found = true;
        }
    ASSERT_TRUE(found) << "no block of " << block.page << " is the file " << need;
  }
  std::string script;
  for (const auto& b : before)
    script += b + "\n";
  if (block.language == "sh") {
    script += text;
  } else {
    YAML::Node doc = YAML::Load(text);
    ASSERT_TRUE(doc.IsMap()) << "a yaml example must be a map";
    if (!doc["cluster"] || !doc["model"] || !doc["plan"]) {
      YAML::Node full = YAML::LoadFile((fs::path(TRAINSIM_SOURCE_DIR) / base).string());
      overlay(full, doc);
      doc = full;
    }
    YAML::Emitter emitter;
    emitter << doc;
    write_file(dir / "example.yaml", emitter.c_str());
    const std::string command = doc["sweep"] ? "sweep" : doc["variants"] ? "compare" : "run --quiet";
    script += "build/trainsim " + command + " example.yaml --out runs/example" + args + "\n";
  }
  const auto outcome = run_in(dir, script);
  EXPECT_EQ(outcome.status, expected_status) << block.page << ":" << block.line << " failed; what ran:\n"
                                             << script << "\nwhat it said:\n"
                                             << outcome.log;
  if (outcome.status == expected_status)
    fs::remove_all(dir);
}

std::string test_name(const ::testing::TestParamInfo<Block>& info) {
  std::string name = info.param.page + "_" + std::to_string(info.param.line);
  for (char& c : name)
    c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Docs, DocExample, ::testing::ValuesIn(every_block()), test_name);

}  // namespace
}  // namespace trainsim::testing
