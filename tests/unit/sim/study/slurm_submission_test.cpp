// The Slurm submission of a sweep, with a stand-in for sbatch (a shell
// script that records its arguments and prints a job id), so the scripts and
// the two submissions are checked without a Slurm. The real Slurm runs in
// tests/slurm/slurm_sweep_test.
#include "sim/study/slurm_submission.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "platforms/input_error.hpp"
#include "support/files.hpp"

namespace trainsim::sim {
namespace {
namespace fs = std::filesystem;

// Prints job ids 41, 42, ... and appends each call's arguments, one per
// line, then "--", to calls.txt; exits 1 when an argument says "refuse".
struct FakeSbatch {
  fs::path dir = testing::fresh_dir("fake-sbatch");
  fs::path exe = dir / "sbatch";
  fs::path calls = dir / "calls.txt";
  FakeSbatch() {
    std::ofstream(exe) << "#!/bin/sh\n"
                          "n=$(cat '"
                       << dir.string() << "/count' 2>/dev/null || echo 41)\n"
                       << "echo $((n + 1)) > '" << dir.string() << "/count'\n"
                       << "for a in \"$@\"; do echo \"$a\" >> '" << calls.string()
                       << "'; case \"$a\" in *refuse*) echo 'sbatch: error: invalid partition' >&2; exit 1;; "
                          "esac; done\n"
                          "echo -- >> '"
                       << calls.string() << "'\necho \"$n;cluster\"\n";
    fs::permissions(exe, fs::perms::owner_all);
  }
  ~FakeSbatch() { fs::remove_all(dir); }
};

SlurmSweep sweep_in(const fs::path& dir, const std::string& sbatch) {
  SlurmSweep s;
  s.trainsim_exe = "/opt/trainsim/bin/trainsim";
  s.study = "studies/my study.yaml";
  s.study_name = "tp pp";
  s.out_dir = "runs/tp-pp";
  s.working_dir = dir;
  s.shards = 3;
  s.sweep_arguments = {"--set", "plan.recompute=full", "--keep", "summary"};
  s.sbatch_arguments = {"--partition=cpu"};
  s.sbatch = sbatch;
  return s;
}

TEST(SlurmSubmission, ArrayScriptRunsOneShardPerTaskWithTheSweepArguments) {
  const auto scripts = slurm_scripts(sweep_in("/work/here", "sbatch"));
  const auto& s = scripts.shard_script;
  EXPECT_NE(s.find("#SBATCH --array=0-2\n"), std::string::npos) << s;
  EXPECT_NE(s.find("#SBATCH --chdir=/work/here\n"), std::string::npos) << s;
  EXPECT_NE(s.find("#SBATCH --output=runs/tp-pp/slurm/shard-%a.log\n"), std::string::npos) << s;
  EXPECT_NE(s.find("#SBATCH --job-name=trainsim-tp_pp\n"), std::string::npos) << s;
  EXPECT_NE(s.find("exec /opt/trainsim/bin/trainsim sweep 'studies/my study.yaml' --set "
                   "plan.recompute=full --keep summary --shard \"$shard/3\" --out "
                   "runs/tp-pp/shards/shard-\"$shard\" -j \"${SLURM_CPUS_PER_TASK:-1}\"\n"),
            std::string::npos)
      << s;
}

TEST(SlurmSubmission, MergeScriptNamesEveryShardDirectory) {
  auto sweep = sweep_in("/work/here", "sbatch");
  sweep.html = true;
  const auto& m = slurm_scripts(sweep).merge_script;
  EXPECT_NE(
      m.find("exec /opt/trainsim/bin/trainsim merge runs/tp-pp/shards/shard-0 runs/tp-pp/shards/shard-1 "
             "runs/tp-pp/shards/shard-2 --out runs/tp-pp --html\n"),
      std::string::npos)
      << m;
  EXPECT_NE(m.find("#SBATCH --output=runs/tp-pp/slurm/merge.log\n"), std::string::npos) << m;
}

TEST(SlurmSubmission, SubmitsTheArrayThenTheMergeAfterIt) {
  FakeSbatch sbatch;
  const fs::path work = testing::fresh_dir("slurm-submit");
  const auto jobs = submit_slurm_sweep(sweep_in(work, sbatch.exe.string()));
  EXPECT_EQ(jobs.array_job, "41");
  EXPECT_EQ(jobs.merge_job, "42");
  const std::string calls = testing::read_file(sbatch.calls);
  const std::string slurm_dir = (work / "runs/tp-pp/slurm").string();
  EXPECT_EQ(calls, "--parsable\n--partition=cpu\n" + slurm_dir +
                       "/shard.sbatch\n--\n"
                       "--parsable\n--dependency=afterany:41\n--kill-on-invalid-dep=yes\n--partition=cpu\n" +
                       slurm_dir + "/merge.sbatch\n--\n");
  EXPECT_EQ(testing::read_file(work / "runs/tp-pp/slurm/shard.sbatch"),
            slurm_scripts(sweep_in(work, "")).shard_script);
  fs::remove_all(work);
}

TEST(SlurmSubmission, ARefusedJobIsBadInputWithWhatSbatchSaid) {
  FakeSbatch sbatch;
  const fs::path work = testing::fresh_dir("slurm-refused");
  auto sweep = sweep_in(work, sbatch.exe.string());
  sweep.sbatch_arguments = {"--partition=refuse"};
  try {
    submit_slurm_sweep(sweep);
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("sbatch refused the array job of the shards (exit status 1)"),
              std::string::npos)
        << e.problems().front();
    EXPECT_NE(e.problems().front().find("invalid partition"), std::string::npos) << e.problems().front();
  }
  fs::remove_all(work);
}

TEST(SlurmSubmission, MissingSbatchSaysSlurmIsNeeded) {
  const fs::path work = testing::fresh_dir("slurm-missing");
  try {
    submit_slurm_sweep(sweep_in(work, "/nonexistent/sbatch"));
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("must be on PATH"), std::string::npos) << e.problems().front();
  }
  fs::remove_all(work);
}

TEST(SlurmSubmission, AnOutputPathWithASpaceIsRefused) {
  auto sweep = sweep_in("/work/here", "sbatch");
  sweep.out_dir = "runs/my study";
  EXPECT_THROW(slurm_scripts(sweep), platforms::InputError);
}

TEST(SlurmSubmission, ShellQuoteLeavesPlainWordsAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("plan.tp=4"), "plan.tp=4");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("cluster.nic={bandwidth: 400Gbps}"), "'cluster.nic={bandwidth: 400Gbps}'");
}

}  // namespace
}  // namespace trainsim::sim
