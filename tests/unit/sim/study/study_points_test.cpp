#include "sim/study/study_points.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <sstream>
#include <thread>

#include "platforms/input_error.hpp"
#include "sim/scenario/infeasible_plan.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/study/progress.hpp"
#include "sim/study/study_file.hpp"

namespace trainsim::sim {
namespace {

// 4 GPUs, a 12-layer 12-head model: tp must divide 12 heads and tp x pp the 4 GPUs.
const std::string kBase = R"(name: tiny
cluster:
  gpu: A100
  nodes: 1
  gpus_per_node: 4
model:
  preset: gpt3-125m
plan:
  dp: auto
  tp: 1
  pp: 1
  global_batch_size: 8
)";

std::vector<std::string> problems_of(const std::string& text,
                                     const std::vector<std::string>& overrides = {}) {
  try {
    prepare_points(parse_study_text(text, "study.yaml"), overrides);
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

std::string all(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems)
    out += p + "\n";
  return out;
}

TEST(StudyExpansion, GridIsTheCartesianProductFirstKeySlowest) {
  const auto study = parse_study_text(kBase + R"(sweep:
  grid:
    plan.pp: [1, 2]
    plan.tp: [1, 2, 4]
)",
                                      "study.yaml");
  EXPECT_EQ(parameter_names(study), (std::vector<std::string>{"plan.pp", "plan.tp"}));
  const auto points = prepare_points(study, {});
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].id, "0000");
  EXPECT_EQ(points[5].id, "0005");
  EXPECT_EQ(points[1].parameters["plan.pp"], 1);
  EXPECT_EQ(points[1].parameters["plan.tp"], 2);
  EXPECT_EQ(points[3].parameters["plan.pp"], 2);
  EXPECT_EQ(points[3].parameters["plan.tp"], 1);
  EXPECT_EQ(points[1].label, "plan.pp=1 plan.tp=2");
  // Only tp 4 x pp 2 = 8 GPUs does not fit the 4 GPUs.
  for (const auto& p : points)
    EXPECT_EQ(p.dropped.has_value(), p.label == "plan.pp=2 plan.tp=4") << p.label;
}

TEST(StudyExpansion, ZipMovesListsTogetherAndGridTimesZipMultiplies) {
  const auto zip_only = parse_study_text(kBase + R"(sweep:
  zip:
    plan.micro_batch_size: [1, 2]
    plan.global_batch_size: [8, 16]
)",
                                         "study.yaml");
  const auto zipped = prepare_points(zip_only, {});
  ASSERT_EQ(zipped.size(), 2u);
  EXPECT_EQ(zipped[1].parameters["plan.micro_batch_size"], 2);
  EXPECT_EQ(zipped[1].parameters["plan.global_batch_size"], 16);

  const auto both = parse_study_text(kBase + R"(sweep:
  grid:
    plan.tp: [1, 2]
  zip:
    - {plan.micro_batch_size: [1, 2], plan.global_batch_size: [8, 16]}
    - {seed: [1, 2, 3]}
)",
                                     "study.yaml");
  const auto points = prepare_points(both, {});
  ASSERT_EQ(points.size(), 2u * 2u * 3u);
  EXPECT_EQ(parameter_names(both),
            (std::vector<std::string>{"plan.tp", "plan.micro_batch_size", "plan.global_batch_size", "seed"}));
  // Last axis fastest: seed, then the zip pair, then tp.
  EXPECT_EQ(points[1].parameters["seed"], 2);
  EXPECT_EQ(points[3].parameters["plan.micro_batch_size"], 2);
  EXPECT_EQ(points[3].parameters["plan.global_batch_size"], 16);
  EXPECT_EQ(points[6].parameters["plan.tp"], 2);
}

TEST(StudyExpansion, EachPointIsAResolvedScenarioWithDerivedDp) {
  const auto study = parse_study_text(kBase + R"(sweep:
  grid:
    cluster.nodes: [1, 2]
    plan.tp: [2]
)",
                                      "study.yaml");
  const auto points = prepare_points(study, {"plan.pp=2"});
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) {
    ASSERT_FALSE(p.dropped) << *p.dropped;
    EXPECT_EQ(p.scenario_yaml.find("sweep:"), std::string::npos);
    EXPECT_NE(p.scenario_yaml.find("trainsim run"), std::string::npos);  // says how to run it alone
  }
  // The point's file is a scenario `trainsim run` accepts, with dp = GPUs / (tp pp).
  const auto one = scenario::parse_scenario_text(points[0].scenario_yaml, "p0.yaml");
  const auto two = scenario::parse_scenario_text(points[1].scenario_yaml, "p1.yaml");
  EXPECT_EQ(one.plan.tp, 2);
  EXPECT_EQ(one.plan.pp, 2);
  EXPECT_EQ(one.plan.dp, 1);
  EXPECT_EQ(two.cluster.gpu_count(), 8);
  EXPECT_EQ(two.plan.dp, 2);
}

TEST(StudyExpansion, VariantsAreANamedAxisThatVariesSlowest) {
  const auto study = parse_study_text(kBase + R"(sweep:
  grid:
    plan.tp: [1, 2]
variants:
  gpipe: {plan.schedule: gpipe}
  1f1b: {plan.schedule: 1f1b, plan.pp: 2}
  base:
)",
                                      "study.yaml");
  EXPECT_EQ(parameter_names(study), (std::vector<std::string>{"variant", "plan.tp"}));
  const auto points = prepare_points(study, {});
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].parameters["variant"], "gpipe");
  EXPECT_EQ(points[2].parameters["variant"], "1f1b");
  EXPECT_EQ(points[3].parameters["plan.tp"], 2);
  EXPECT_EQ(points[5].parameters["variant"], "base");
  EXPECT_EQ(points[2].label, "variant=1f1b plan.tp=1");
  EXPECT_EQ(scenario::parse_scenario_text(points[2].scenario_yaml, "p.yaml").plan.pp, 2);
  EXPECT_EQ(scenario::parse_scenario_text(points[4].scenario_yaml, "p.yaml").plan.pp, 1);
}

// A study of named plans (variants only) may still draw plots over them:
// `sweep:` holds `plots` alone, and the variants are the only axis.
TEST(StudyExpansion, ASweepOfPlotsAloneDrawsOverTheVariants) {
  const auto study = parse_study_text(kBase + R"(variants:
  small: {plan.tp: 1}
  wide: {plan.tp: 2}
sweep:
  plots:
    - {y: tokens_per_s_per_gpu, x: plan.tp, file: per-gpu.svg}
)",
                                      "study.yaml");
  EXPECT_TRUE(study.has_sweep);
  EXPECT_TRUE(study.has_variants);
  ASSERT_EQ(study.plots.size(), 1u);
  EXPECT_EQ(study.plots[0].file, "per-gpu.svg");
  EXPECT_EQ(parameter_names(study), (std::vector<std::string>{"variant"}));
  const auto points = prepare_points(study, {});
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].parameters["variant"], "wide");
}

// Without variants a sweep of plots alone has nothing to draw over: refused,
// saying what it needs.
TEST(StudyErrors, ASweepOfPlotsAloneNeedsVariants) {
  const auto text = all(problems_of(kBase + R"(sweep:
  plots:
    - {y: mfu, x: plan.tp}
)"));
  EXPECT_NE(text.find("study.yaml:"), std::string::npos) << text;
  EXPECT_NE(
      text.find("sweep: expected `grid` (a cartesian product) and/or `zip` (parallel lists) of scenario "
                "keys (`plots` alone needs a `variants` section)"),
      std::string::npos)
      << text;
}

TEST(StudyFilters, PlansThatDoNotDivideAreDroppedWithTheLoadersReasonAndLine) {
  const auto study = parse_study_text(kBase + R"(sweep:
  grid:
    plan.tp: [1, 2, 8, 3]
    plan.pp: [1, 2]
)",
                                      "study.yaml");
  const auto points = prepare_points(study, {});
  ASSERT_EQ(points.size(), 8u);
  std::set<std::string> dropped;
  for (const auto& p : points)
    if (p.dropped)
      dropped.insert(p.label);
  // tp x pp must divide the 4 GPUs: tp 8 and tp 3 never do.
  EXPECT_EQ(dropped, (std::set<std::string>{"plan.tp=8 plan.pp=1", "plan.tp=8 plan.pp=2",
                                            "plan.tp=3 plan.pp=1", "plan.tp=3 plan.pp=2"}));
  const auto& tp8 = points[4];
  ASSERT_TRUE(tp8.dropped);
  EXPECT_EQ(tp8.dropped->rfind("invalid_plan: ", 0), 0u) << *tp8.dropped;
  // The location is the value in the sweep list (line 15, the tp list).
  EXPECT_NE(tp8.dropped->find("study.yaml:15:"), std::string::npos) << *tp8.dropped;
  EXPECT_NE(tp8.dropped->find("does not divide"), std::string::npos) << *tp8.dropped;
  EXPECT_TRUE(tp8.scenario_yaml.empty());
}

TEST(StudyFilters, BatchThatDoesNotDivideIsDroppedToo) {
  const auto study = parse_study_text(kBase + R"(sweep:
  grid:
    plan.global_batch_size: [8, 6]
)",
                                      "study.yaml");
  const auto points = prepare_points(study, {});
  ASSERT_EQ(points.size(), 2u);
  EXPECT_FALSE(points[0].dropped);
  ASSERT_TRUE(points[1].dropped);
  EXPECT_NE(points[1].dropped->find("global_batch_size"), std::string::npos) << *points[1].dropped;
}

TEST(StudyFilters, InfeasiblePlansAreBadInputForRunAndCarryAReasonForSweeps) {
  // The hook the memory model throws through: still an InputError (run exits 1).
  try {
    throw scenario::InfeasiblePlan(scenario::Infeasibility::does_not_fit_in_memory,
                                   {"t.yaml: plan: GPU 3 needs 90 GiB of 80 GiB"});
  } catch (const platforms::InputError& e) {
    EXPECT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(dynamic_cast<const scenario::InfeasiblePlan&>(e).reason(),
              scenario::Infeasibility::does_not_fit_in_memory);
  }
  EXPECT_EQ(to_string(scenario::Infeasibility::does_not_fit_in_memory), "does_not_fit_in_memory");
  EXPECT_EQ(to_string(scenario::Infeasibility::invalid_plan), "invalid_plan");
  // The loader reports cross-field plan rules as InfeasiblePlan, malformed input as plain InputError.
  EXPECT_THROW(scenario::parse_scenario_text(kBase, "t.yaml", {"plan.tp=8"}), scenario::InfeasiblePlan);
  try {
    scenario::parse_scenario_text(kBase, "t.yaml", {"plan.tp=x"});
    FAIL();
  } catch (const scenario::InfeasiblePlan&) {
    FAIL() << "a malformed value is not an infeasible plan";
  } catch (const platforms::InputError&) {
  }
}

TEST(StudyErrors, MalformedValuesStopTheStudyNamingTheLineAndThePoints) {
  const auto problems = problems_of(kBase + R"(sweep:
  grid:
    plan.tp: [1, two]
    plan.pp: [1, 2]
)");
  ASSERT_EQ(problems.size(), 1u) << all(problems);
  EXPECT_NE(problems[0].find("study.yaml:15:18: plan.tp: 'two' is not a whole number"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("(point 0002 and 1 more)"), std::string::npos) << problems[0];
}

TEST(StudyErrors, UnknownSweptKeysAreErrorsNotDroppedPoints) {
  const auto problems = problems_of(kBase + R"(sweep:
  grid:
    plan.tpp: [1, 2]
)");
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(all(problems).find("plan.tpp: unknown key"), std::string::npos) << all(problems);
}

TEST(StudyErrors, StudySectionsAreCheckedStrictlyAndAllAtOnce) {
  const auto problems = problems_of(kBase + R"(sweep:
  grid:
    plan.tp: []
    plan.pp: 2
  zip:
    plan.micro_batch_size: [1, 2]
    plan.global_batch_size: [8, 16, 32]
  colour: blue
  plots:
    - {x: cluster.gpus}
)");
  const auto text = all(problems);
  EXPECT_NE(text.find("sweep.grid.plan.tp: expected a non-empty list of values"), std::string::npos) << text;
  EXPECT_NE(text.find("sweep.grid.plan.pp: expected a non-empty list of values, found '2'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sweep.zip.plan.global_batch_size: has 3 values but plan.micro_batch_size has 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sweep.colour: unknown key"), std::string::npos) << text;
  EXPECT_NE(text.find("sweep.plots[0].y: missing"), std::string::npos) << text;
  EXPECT_GE(problems.size(), 5u);
}

// A plot's column is checked when the study loads: a typo (in a figure's
// name, or in the cause of lost time it names) is refused there with its
// line, while a figure only some runs write, and the study's own
// parameters, are accepted (docs/studies.md, "Plots whose column no point has").
TEST(StudyErrors, APlotColumnNoRunCouldWriteIsRefusedWhenTheStudyLoads) {
  const auto problems = problems_of(kBase + R"(sweep:
  grid:
    plan.tp: [1, 2]
  plots:
    - {x: plan.tp, y: tokens_per_joule}
    - {x: plan.tp, y: lost_time.by_cause.expert_imbalence.fraction_of_gpu_time}
    - {x: plan.tp, y: mfu, lines: [plna.pp], where: {varaint: a}}
)");
  const auto text = all(problems);
  EXPECT_EQ(problems.size(), 4u) << text;
  EXPECT_NE(text.find("study.yaml:17:"), std::string::npos) << text;
  EXPECT_NE(text.find("sweep.plots[0].y: 'tokens_per_joule' is not a column trainsim writes (expected one of "
                      "the study's parameters: plan.tp or a summary.json figure"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("did you mean 'tokens_per_iteration'?"), std::string::npos) << text;
  EXPECT_NE(text.find("sweep.plots[1].y: 'lost_time.by_cause.expert_imbalence.fraction_of_gpu_time' names no "
                      "cause of lost time: 'expert_imbalence' is not one of warmup_cooldown, p2p_wait, "
                      "collective_wait, straggler, dp_comm, optimizer, expert_imbalance"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sweep.plots[2].lines[0]: 'plna.pp'"), std::string::npos) << text;
  EXPECT_NE(text.find("sweep.plots[2].where: 'varaint'"), std::string::npos) << text;

  EXPECT_TRUE(problems_of(kBase + R"(variants:
  a: {}
sweep:
  grid:
    plan.tp: [1, 2]
  plots:
    - {x: plan.tp, y: lost_time.by_cause.expert_imbalance.fraction_of_gpu_time, where: {variant: a}}
    - {x: plan.tp, y: mfu_fp8_peak, lines: model.moe.routing.kind}
)")
                  .empty());
}

TEST(StudyErrors, AKeySweptTwiceOrOverriddenIsRefused) {
  const auto twice = problems_of(kBase + R"(sweep:
  grid:
    plan.tp: [1, 2]
  zip:
    plan.tp: [1, 2]
)");
  EXPECT_NE(all(twice).find("'plan.tp' and 'plan.tp' are both varied"), std::string::npos) << all(twice);
  const auto set = problems_of(kBase + R"(sweep:
  grid:
    plan.tp: [1, 2]
)",
                               {"plan.tp=4"});
  EXPECT_NE(all(set).find("--set plan.tp=4: 'plan.tp' is varied by the study"), std::string::npos)
      << all(set);
}

TEST(StudyErrors, RunRejectsAStudyFileAndSaysWhichCommandRunsIt) {
  try {
    scenario::parse_scenario_text(kBase + "sweep:\n  grid:\n    plan.tp: [1, 2]\n", "study.yaml");
    FAIL();
  } catch (const platforms::InputError& e) {
    const auto text = all(e.problems());
    EXPECT_NE(text.find("study.yaml:14:3: sweep: `trainsim run` simulates one scenario"), std::string::npos)
        << text;
    EXPECT_NE(text.find("trainsim sweep study.yaml"), std::string::npos) << text;
  }
  try {
    scenario::parse_scenario_text(kBase + "variants:\n  a: {plan.tp: 2}\n", "study.yaml");
    FAIL();
  } catch (const platforms::InputError& e) {
    EXPECT_NE(all(e.problems()).find("trainsim compare study.yaml"), std::string::npos) << all(e.problems());
  }
}

TEST(StudyShards, EveryPointBelongsToExactlyOneShard) {
  const analysis::ShardInfo s = parse_shard("2/3");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  for (std::size_t i = 0; i < 20; ++i) {
    int owners = 0;
    for (int k = 0; k < 3; ++k)
      owners += in_shard(i, {k, 3});
    EXPECT_EQ(owners, 1);
  }
  for (const char* bad : {"3/3", "-1/2", "1", "a/b", "1/0", "1/2/3"})
    EXPECT_THROW(parse_shard(bad), platforms::InputError) << bad;
}

TEST(StudyShards, FingerprintChangesWithAnyPointAndNotOtherwise) {
  const auto study = parse_study_text(kBase + "sweep:\n  grid:\n    plan.tp: [1, 2]\n", "study.yaml");
  const auto a = study_fingerprint(prepare_points(study, {}));
  EXPECT_EQ(a, study_fingerprint(prepare_points(study, {})));
  EXPECT_NE(a, study_fingerprint(prepare_points(study, {"plan.pp=2"})));
  EXPECT_EQ(a.size(), 16u);
}

TEST(StudyShards, TheSameStudyGivenByAnotherPathHasTheSamePointsAndFingerprint) {
  // Shards may run from different directories; resume compares point files.
  const std::string text = kBase + "sweep:\n  grid:\n    plan.tp: [1, 8]\n";
  const auto here = prepare_points(parse_study_text(text, "study.yaml"), {});
  const auto there = prepare_points(parse_study_text(text, "../elsewhere/study.yaml"), {});
  ASSERT_TRUE(here[1].dropped);
  EXPECT_EQ(here[0].scenario_yaml, there[0].scenario_yaml);
  EXPECT_EQ(study_fingerprint(here), study_fingerprint(there));
}

TEST(StudyProgress, BarAndTimeLeftReadNaturally) {
  EXPECT_EQ(format_time_left(42), "42s");
  EXPECT_EQ(format_time_left(185), "3m05s");
  EXPECT_EQ(format_time_left(3720), "1h02m");
  ProgressCounts c{.total = 40, .done = 10, .failed = 1, .running = 2};
  EXPECT_DOUBLE_EQ(*estimate_time_left_s(c, 20.0), 60.0);
  EXPECT_FALSE(estimate_time_left_s(ProgressCounts{.total = 4}, 3.0));
  const auto bar = progress_bar_line(c, 20.0, 100);
  EXPECT_EQ(bar.rfind("[######-------------------] 10/40  1 failed  2 running  20s elapsed  ~1m00s left", 0),
            0u)
      << bar;
  EXPECT_LE(progress_bar_line(c, 20.0, 50).size(), 50u);
  // The bar keeps its width while the text beside it changes.
  const auto before_first = progress_bar_line(ProgressCounts{.total = 40, .running = 2}, 3.0, 100);
  const auto later = progress_bar_line(ProgressCounts{.total = 40, .done = 39, .failed = 12}, 4000.0, 100);
  EXPECT_EQ(before_first.find(']'), bar.find(']')) << before_first;
  EXPECT_EQ(later.find(']'), bar.find(']')) << later;
}

// The line of run / plan / validate / collective: silent in the first
// second, then the text with the elapsed time; as lines when not in place.
TEST(StudyProgress, ProgressLineWaitsASecondThenShowsTheTextAndTheTime) {
  std::ostringstream out;
  {
    ProgressLine line(out, true, false);
    line.update("simulating");
    EXPECT_EQ(out.str(), "");
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    line.update("simulating 10/20 tasks");
    line.print_above("note: an expensive run");
  }
  EXPECT_EQ(out.str(), "simulating 10/20 tasks [1s]\nnote: an expensive run\n") << out.str();
  std::ostringstream off;
  {
    ProgressLine line(off, false, true);
    line.update("simulating");
    line.print_above("note: shown even without a progress line");
  }
  EXPECT_EQ(off.str(), "note: shown even without a progress line\n");
}

}  // namespace
}  // namespace trainsim::sim

namespace trainsim::sim {
namespace {

TEST(ShippedStudies, TheTpPpStudyExpandsToSixteenPointsThreeDropped) {
  const auto study = read_study_file(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/study-tp-pp.yaml");
  EXPECT_EQ(study.plots.size(), 3u);
  const auto points = prepare_points(study, {});
  ASSERT_EQ(points.size(), 16u);
  std::size_t dropped = 0;
  for (const auto& p : points)
    dropped += p.dropped.has_value();
  EXPECT_EQ(dropped, 3u);  // tp x pp = 32 or 64 > 16 GPUs
}

TEST(ShippedStudies, TheScheduleComparisonHasTwoVariants) {
  const auto study = read_study_file(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/compare-schedules.yaml");
  EXPECT_FALSE(study.has_sweep);
  const auto points = prepare_points(study, {});
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].parameters["variant"], "gpipe");
  EXPECT_FALSE(points[0].dropped);
  EXPECT_FALSE(points[1].dropped);
}

}  // namespace
}  // namespace trainsim::sim
