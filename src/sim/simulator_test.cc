// Small hand-made traces whose exact start and end times, per policy, are worked out here.
#include "sim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>
#include "sim/generate.h"
#include "sim/report.h"

namespace cohort::sim {
namespace {

constexpr const char* kHeader =
    "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus\n";

struct Times {
  double start;
  double end;
};

// Runs `rows` (Cohort CSV rows) on `nodes` x `gpus` under `policy` and returns each job's
// first start and end.
std::map<std::string, Times> Simulated(const std::string& rows, int nodes, int gpus,
                                       scheduler::SchedulerConfig policy, SimOptions options = {},
                                       SimResult* out = nullptr) {
  auto trace = ParseTrace(std::string(kHeader) + rows, TraceFormat::kCohort);
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_TRUE(trace->skipped.empty());
  ClusterSpec cluster;
  cluster.nodes = nodes;
  cluster.gpus_per_node = gpus;
  options.scheduler = policy;
  SimResult result = Simulate(*trace, cluster, options);
  std::map<std::string, Times> times;
  for (const auto& j : result.jobs) times[j.id] = {j.start, j.end};
  if (out) *out = std::move(result);
  return times;
}

scheduler::SchedulerConfig Fifo(bool backfill) {
  scheduler::SchedulerConfig c;
  c.policy = scheduler::Policy::kFifo;
  c.backfill = backfill;
  return c;
}

SimOptions Exact() {
  SimOptions o;
  o.runtime_estimate = 1.0;  // every job declares exactly its duration
  return o;
}

TEST(Simulator, FifoRunsInSubmissionOrderAndBlocks) {
  // 4 GPUs. a holds them 0-100; b waits for them; c (1 GPU) is behind b and waits for b to end.
  auto t =
      Simulated("a,0,100,4,,,,,,\nb,10,50,4,,,,,,\nc,20,30,1,,,,,,\n", 1, 4, Fifo(false), Exact());
  EXPECT_EQ(t["a"].start, 0);
  EXPECT_EQ(t["a"].end, 100);
  EXPECT_EQ(t["b"].start, 100);
  EXPECT_EQ(t["b"].end, 150);
  EXPECT_EQ(t["c"].start, 150);
  EXPECT_EQ(t["c"].end, 180);
}

TEST(Simulator, BackfillWithAReservation) {
  // a holds 3 of 4 GPUs until 100. b (4 GPUs) is reserved for 100. c (1 GPU, 30 s) ends before
  // 100: it backfills at 20. d (1 GPU, 200 s) would delay b: it waits until b is done.
  const std::string rows = "a,0,100,3,,,,,,\nb,10,50,4,,,,,,\nc,20,30,1,,,,,,\nd,30,200,1,,,,,,\n";
  auto t = Simulated(rows, 1, 4, Fifo(true), Exact());
  EXPECT_EQ(t["b"].start, 100);
  EXPECT_EQ(t["b"].end, 150);
  EXPECT_EQ(t["c"].start, 20);
  EXPECT_EQ(t["c"].end, 50);
  EXPECT_EQ(t["d"].start, 150);
  EXPECT_EQ(t["d"].end, 350);
  // Without backfill, c waits behind b too.
  auto strict = Simulated(rows, 1, 4, Fifo(false), Exact());
  EXPECT_EQ(strict["c"].start, 150);
  EXPECT_EQ(strict["c"].end, 180);
}

TEST(Simulator, PriorityOrdersTheQueue) {
  // a holds the 4 GPUs until 100 (it cannot be preempted: its first minute, then a pass at 60
  // preempts it for c). Here preemption is off: c (high) overtakes b (normal) at 100.
  scheduler::SchedulerConfig config;
  config.priority_preemption = false;
  auto t =
      Simulated("a,0,100,4,,,0,,,\nb,10,50,4,,,0,,,\nc,20,30,4,,,100,,,\n", 1, 4, config, Exact());
  EXPECT_EQ(t["c"].start, 100);
  EXPECT_EQ(t["c"].end, 130);
  EXPECT_EQ(t["b"].start, 130);
  EXPECT_EQ(t["b"].end, 180);
}

TEST(Simulator, LeastAttainedServicePreemptsAJobOnceItCrossesItsThreshold) {
  // 1 GPU, threshold 1 GPU-hour. a (10,000 s) runs; b arrives at 100 and waits while a is in
  // the first queue. At 3,600 s a moves to the second queue: b preempts it, runs 100 s, and a
  // resumes at 3,700 with its 6,400 s left (no restart cost, checkpoints all the time).
  scheduler::SchedulerConfig las;
  las.policy = scheduler::Policy::kLeastAttainedService;
  SimOptions o = Exact();
  o.runtime_estimate = 0;
  o.grace_seconds = 0;
  o.restart_cost_seconds = 0;
  o.checkpoint_interval_seconds = 0;
  SimResult r;
  auto t = Simulated("a,0,10000,1,,,,,,\nb,100,100,1,,,,,,\n", 1, 1, las, o, &r);
  EXPECT_EQ(t["b"].start, 3600);
  EXPECT_EQ(t["b"].end, 3700);
  EXPECT_EQ(t["a"].end, 10100);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].attempts, 2);
  EXPECT_EQ(r.jobs[0].lost_gpu_seconds, 0) << "checkpointed all the time, free to restart";
  // FIFO: b waits for a to end.
  auto fifo = Simulated("a,0,10000,1,,,,,,\nb,100,100,1,,,,,,\n", 1, 1, Fifo(false), o);
  EXPECT_EQ(fifo["b"].start, 10000);
}

TEST(Simulator, PreemptionCostsTheGracePeriodLostWorkAndTheRestartCost) {
  // 2 GPUs. a (low, 1,000 s) starts at 0. b (high) arrives at 250 and preempts a at once (no
  // minimum run time). a stops at 260 (10 s grace) having run 260 s, of which 200 s are
  // checkpointed (every 100 s); it pays 30 s to restart: 1,000 - 200 + 30 = 830 s left.
  // b runs 260-360; a runs again 360-1,190.
  scheduler::SchedulerConfig config;
  config.min_runtime_before_preemption = Duration(0);
  SimOptions o;
  o.runtime_estimate = 0;
  o.grace_seconds = 10;
  o.restart_cost_seconds = 30;
  o.checkpoint_interval_seconds = 100;
  SimResult r;
  auto t = Simulated("a,0,1000,2,,,-100,,,\nb,250,100,2,,,100,,,\n", 1, 2, config, o, &r);
  EXPECT_EQ(t["b"].start, 260);
  EXPECT_EQ(t["b"].end, 360);
  EXPECT_EQ(t["a"].start, 0);
  EXPECT_EQ(t["a"].end, 1190);
  EXPECT_EQ(r.jobs[0].attempts, 2);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].queued, 100) << "a waits again from 260 to 360";
  EXPECT_EQ(r.jobs[1].queued, 10) << "b waits for the grace period";
  // a lost the 60 s since its checkpoint at 200 s and pays 30 s to restart, on 2 GPUs.
  EXPECT_EQ(r.jobs[0].lost_gpu_seconds, (60 + 30) * 2);
  EXPECT_EQ(r.jobs[1].lost_gpu_seconds, 0);
  Figures f = Summarize(r);
  EXPECT_DOUBLE_EQ(f.lost_gpu_seconds, 180);
  // GPU-time held: a 0-260 and 360-1,190, b 260-360, 2 GPUs each.
  EXPECT_DOUBLE_EQ(f.used_gpu_seconds, 2 * (260 + 830 + 100));
  EXPECT_DOUBLE_EQ(f.lost_share, 180.0 / 2380);
  EXPECT_THAT(JobsCsv(r), ::testing::HasSubstr("a,default,,2,0,0,1190,100,2,1,0,180,0,0,-1\n"));
  // The minimum run time defers the preemption: with 60 s, a pass at 60 s... a has run 250 s by
  // then, so nothing changes; with 300 s, b waits for a's 300th second.
  config.min_runtime_before_preemption = std::chrono::seconds(300);
  auto later = Simulated("a,0,1000,2,,,-100,,,\nb,250,100,2,,,100,,,\n", 1, 2, config, o);
  EXPECT_EQ(later["b"].start, 310);  // preempted at 300, stopped at 310
}

TEST(Simulator, ARestartCostIsOwedOnceNotAddedUp) {
  // As above until 360: a restarts with 830 s left (30 s restart, 800 s of work). c (high)
  // preempts it at once at 400; a stops at 410 having run 50 s, no checkpoint since its restart:
  // it owes its 800 s and one restart again, 830 s, not 860. c runs 410-510, a 510-1,340.
  // Lost: 60 s of work and a restart at the first preemption, 20 s of work (the 50 s less the
  // restart already counted) and a restart at the second, on 2 GPUs.
  scheduler::SchedulerConfig config;
  config.min_runtime_before_preemption = Duration(0);
  SimOptions o;
  o.runtime_estimate = 0;
  o.grace_seconds = 10;
  o.restart_cost_seconds = 30;
  o.checkpoint_interval_seconds = 100;
  SimResult r;
  auto t = Simulated("a,0,1000,2,,,-100,,,\nb,250,100,2,,,100,,,\nc,400,100,2,,,100,,,\n", 1, 2,
                     config, o, &r);
  EXPECT_EQ(t["c"].start, 410);
  EXPECT_EQ(t["a"].end, 1340);
  EXPECT_EQ(r.jobs[0].preemptions, 2);
  EXPECT_EQ(r.jobs[0].lost_gpu_seconds, (60 + 30 + 20 + 30) * 2);
}

TEST(Simulator, JobsTooBigForTheClusterAreRefusedNotLoopedOn) {
  SimResult r;
  auto t = Simulated("a,0,100,16,,,,,,\nb,0,100,2,,,,,,\n", 1, 8, Fifo(true), Exact(), &r);
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_EQ(r.refused[0].first, "a");
  EXPECT_THAT(r.refused[0].second, ::testing::HasSubstr("needs 16 GPUs; the cluster has 8"));
  EXPECT_EQ(t["b"].end, 100);
  Figures f = Summarize(r);
  EXPECT_EQ(f.refused, 1u);
  EXPECT_EQ(f.finished, 1u);
  EXPECT_EQ(f.unfinished, 1u);
}

TEST(Simulator, JobsStoppedByTheirMaxRuntimeAreUnfinished) {
  // a declares 50 s but needs 100: it is stopped at 50 and counts as failed, not finished.
  SimResult r;
  auto t = Simulated("a,0,100,1,,,,50,,\nb,0,30,1,,,,,,\n", 1, 2, Fifo(true), Exact(), &r);
  EXPECT_EQ(t["a"].end, 50);
  Figures f = Summarize(r);
  EXPECT_EQ(f.finished, 1u);
  EXPECT_EQ(f.failed, 1u);
  EXPECT_EQ(f.unfinished, 1u);
  EXPECT_DOUBLE_EQ(f.avg_jct, 30) << "only finished jobs count";
  EXPECT_EQ(f.lost_gpu_seconds, 0) << "a stopped job is not a preempted one";
}

TEST(Simulator, FiguresFromTheJobRecords) {
  SimResult r;
  Simulated("a,0,100,4,,,,,,\nb,10,50,4,,,,,,\nc,20,30,1,,,,,,\n", 1, 4, Fifo(false), Exact(), &r);
  Figures f = Summarize(r);
  EXPECT_EQ(f.finished, 3u);
  EXPECT_DOUBLE_EQ(f.avg_jct, (100 + 140 + 160) / 3.0);
  EXPECT_DOUBLE_EQ(f.median_jct, 140);
  EXPECT_DOUBLE_EQ(f.avg_queueing, (0 + 90 + 130) / 3.0);
  EXPECT_DOUBLE_EQ(f.makespan, 180);
  // GPU-time: 4 x 100 + 4 x 50 + 1 x 30 = 630 of 4 x 180.
  EXPECT_NEAR(f.utilization, 630.0 / 720.0, 1e-9);
  EXPECT_THAT(JobsCsv(r), ::testing::HasSubstr("c,default,,1,20,150,180,130,1,0,0,0,0,0,-1\n"));
  EXPECT_EQ(f.unfinished, 0u);
  EXPECT_EQ(f.lost_gpu_seconds, 0);
}

TEST(Simulator, EveryTeamIsReportedEvenWithoutJobs) {
  auto trace = ParseTrace(std::string(kHeader) + "a,0,100,4,vision,,,,,\n", TraceFormat::kCohort);
  ASSERT_TRUE(trace.ok());
  ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.teams = *ParseTeams("vision:6,nlp:2");
  Figures f = Summarize(Simulate(*trace, cluster, SimOptions{}));
  ASSERT_EQ(f.teams.size(), 2u);
  EXPECT_EQ(f.teams[0].team, "nlp");
  EXPECT_EQ(f.teams[0].jobs, 0u);
  EXPECT_EQ(f.teams[0].guaranteed_gpus, 2);
  EXPECT_EQ(f.teams[1].jobs, 1u);
}

TEST(Simulator, AWaitWithinTheGuaranteeLastsOneMinimumRunTimeAndOneGracePeriod) {
  // One node of 4 GPUs; vision and nlp are guaranteed 2 each. nlp borrows all 4 from 0. At 10
  // vision's 2-GPU job arrives within its guarantee and reclaims: nlp's job may be preempted
  // from 60 (the minimum run time), stops at 90 (30 s grace), and vision's job starts then.
  auto trace = ParseTrace(std::string(kHeader) + "n,0,1000,4,nlp,,,,,\nv,10,100,2,vision,,,,,\n",
                          TraceFormat::kCohort);
  ASSERT_TRUE(trace.ok());
  ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.gpus_per_node = 4;
  cluster.teams = *ParseTeams("vision:2,nlp:2");
  SimOptions o;
  o.grace_seconds = 30;
  o.scheduler.policy = scheduler::Policy::kFifo;
  o.scheduler.min_runtime_before_preemption = std::chrono::seconds(60);
  SimResult r = Simulate(*trace, cluster, o);
  EXPECT_EQ(r.jobs[1].start, 90);
  EXPECT_EQ(r.jobs[1].guaranteed_wait, 80);
  // nlp's job, back in the queue, needs 4 GPUs of its guarantee of 2: no promise to keep.
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].guaranteed_wait, -1);
  Figures f = Summarize(r);
  EXPECT_EQ(f.max_guaranteed_wait, 80);
  ASSERT_EQ(f.teams.size(), 2u);
  EXPECT_EQ(f.teams[1].team, "vision");
  EXPECT_EQ(f.teams[1].max_guaranteed_wait, 80);
}

TEST(Simulator, SameInputSameResult) {
  std::string rows;
  for (int i = 0; i < 200; ++i) {
    rows += fmt::format("j{},{},{},{},,,,,,\n", i, i * 37 % 1000, 100 + i * 13 % 900,
                        std::vector<int>{1, 1, 2, 4, 8}[static_cast<size_t>(i % 5)]);
  }
  SimResult a, b;
  Simulated(rows, 2, 8, scheduler::SchedulerConfig{}, SimOptions{}, &a);
  Simulated(rows, 2, 8, scheduler::SchedulerConfig{}, SimOptions{}, &b);
  EXPECT_EQ(JobsCsv(a), JobsCsv(b));
}

TEST(Simulator, TeamsSharingABusyClusterDoNotThrash) {
  // A busy cluster shared by three teams of equal guarantees, under every policy. Quota reclaim
  // once preempted jobs 13 times each on average, as teams took GPUs back from each other and
  // victims took back what they had freed, and then one job 13 times while others were spared:
  // now every job finishes, preemptions stay rare and no job bears them all.
  GenerateOptions g;
  g.jobs = 400;
  g.seed = 11;
  g.jobs_per_hour = 15;
  Trace trace;
  trace.jobs = GenerateTrace(g);
  ClusterSpec cluster;
  cluster.nodes = 8;
  cluster.gpus_per_node = 8;
  cluster.teams = {TeamQuota{"a", 21, std::nullopt}, TeamQuota{"b", 21, std::nullopt},
                   TeamQuota{"c", 22, std::nullopt}};
  scheduler::SchedulerConfig las;
  las.policy = scheduler::Policy::kLeastAttainedService;
  for (const auto& [name, config] : std::vector<std::pair<std::string, scheduler::SchedulerConfig>>{
           {"fifo", Fifo(false)},
           {"fifo+backfill", Fifo(true)},
           {"las", las},
           {"default", scheduler::SchedulerConfig{}}}) {
    SimOptions options;
    options.scheduler = config;
    SimResult r = Simulate(trace, cluster, options);
    Figures f = Summarize(r);
    int most = 0;
    for (const auto& j : r.jobs) most = std::max(most, j.preemptions);
    EXPECT_EQ(f.finished, trace.jobs.size()) << name;
    if (name == "las") {
      // Least attained service preempts long jobs on purpose, whenever short ones wait.
      EXPECT_LT(f.preemptions_per_job, 5) << name;
    } else {
      EXPECT_LT(f.preemptions_per_job, 0.5) << name;
      // The default also preempts its teams' jobs of 16 GPU-hours and more for new ones: here
      // 8-GPU jobs of 60 hours are preempted up to 6 times in their life (levels and reclaim
      // together), once per 10 hours of work. Bounding that better is open (docs/simulator.md).
      EXPECT_LE(most, name == "default" ? 6 : 5)
          << name << ": the same job preempted again and again";
    }
  }
}

TEST(Simulator, ElasticJobsGrowIntoIdleGpusAndShrinkForAWaitingJob) {
  // One 8-GPU node. e is elastic (1..8 replicas of 1 GPU; 800 s of work at its minimum of 1):
  // alone, it grows at once to all 8 GPUs and ends after 100 s...
  SimResult alone;
  auto t = Simulated("e,0,800,1,,,,,1,8\n", 1, 8, Fifo(true), Exact(), &alone);
  EXPECT_DOUBLE_EQ(t["e"].start, 0);
  EXPECT_NEAR(t["e"].end, 100, 1e-6);
  EXPECT_EQ(Summarize(alone).finished, 1u);
  // ...and a rigid 4-GPU job of higher priority arriving at 40 s takes GPUs back from it once e
  // has run its minimum of 60 s: e shrinks to 4 (its highest replicas stop, with the 30 s grace
  // period), and r starts when they are gone.
  SimResult shared;
  t = Simulated("e,0,800,1,,,,,1,8\nr,40,100,4,,,100,,,\n", 1, 8, scheduler::SchedulerConfig{},
                Exact(), &shared);
  EXPECT_NEAR(t["r"].start, 90, 1e-6);
  EXPECT_NEAR(t["r"].end, 190, 1e-6);
  // e did 480 s of its work by 60 s (8 replicas), then the other 320 s on 4: 80 s.
  EXPECT_NEAR(t["e"].end, 140, 1e-6);
  EXPECT_EQ(Summarize(shared).finished, 2u);
  EXPECT_EQ(shared.jobs[0].preemptions, 0) << "shrinking is not preempting";
}

TEST(Simulator, DecisionsBetweenPassesWhenManyJobsWait) {
  // The master's incremental path: with jobs waiting above the threshold, arrivals and
  // completions are decided against the last pass, and full passes run on the next tick only.
  std::string rows;
  for (int i = 0; i < 300; ++i) rows += fmt::format("j{},{},{},1,,,,,,\n", i, i, 50 + i % 7);
  SimOptions every_change = Exact();
  SimOptions incremental = Exact();
  incremental.incremental_above = 10;
  SimResult full, between;
  auto a = Simulated(rows, 2, 4, Fifo(true), every_change, &full);
  auto b = Simulated(rows, 2, 4, Fifo(true), incremental, &between);
  EXPECT_EQ(Summarize(full).finished, 300u);
  EXPECT_EQ(Summarize(between).finished, 300u);
  EXPECT_EQ(full.started_between_passes, 0u);
  EXPECT_GT(between.started_between_passes, 100u) << "most starts were decided between passes";
  // Under fifo with equal jobs both give each job the same start, whichever path decided it.
  for (const auto& [id, times] : a) EXPECT_NEAR(b[id].start, times.start, 1e-6) << id;
}

}  // namespace
}  // namespace cohort::sim

namespace cohort::sim {
namespace {

TEST(Simulator, TheDefaultOrdersByHistoryAndTheOracleByTrueRunTime) {
  // 2 GPUs. h1..h3 (1 GPU, 100 s) and g1..g3 (2 GPUs, 1000 s) end first and teach the history
  // that 1-GPU jobs take 100 GPU-seconds and 2-GPU jobs 2000. Then x holds both GPUs 7000-8000;
  // a (2 GPUs, 500 s) and b (1 GPU, 50 s) arrive while it runs. At 8000 the default starts b, the
  // shorter by history, and a once b is done; fifo+backfill starts a, and b after it. The oracle
  // knows the true run times: b first as well.
  std::string rows =
      "h1,0,100,1,,,,,,\nh2,0,100,1,,,,,,\nh3,0,100,1,,,,,,\n"
      "g1,1000,1000,2,,,,,,\ng2,3000,1000,2,,,,,,\ng3,5000,1000,2,,,,,,\n"
      "x,7000,1000,2,,,,,,\na,7100,500,2,,,,,,\nb,7200,50,1,,,,,,\n";
  auto by_default = Simulated(rows, 1, 2, scheduler::SchedulerConfig{});
  EXPECT_EQ(by_default["b"].start, 8000);
  EXPECT_EQ(by_default["a"].start, 8050);
  auto fifo = Simulated(rows, 1, 2, Fifo(true));
  EXPECT_EQ(fifo["a"].start, 8000);
  EXPECT_EQ(fifo["b"].start, 8500);
  scheduler::SchedulerConfig oracle;
  oracle.policy = scheduler::Policy::kSjfOracle;
  auto sjf = Simulated(rows, 1, 2, oracle);
  EXPECT_EQ(sjf["b"].start, 8000);
  EXPECT_EQ(sjf["a"].start, 8050);
}

TEST(Simulator, WithoutHistoryTheDefaultKeepsSubmissionOrder) {
  // The same arrivals with nothing ended before: no estimate, so a (first) starts first.
  auto t = Simulated("x,7000,1000,2,,,,,,\na,7100,500,2,,,,,,\nb,7200,50,1,,,,,,\n", 1, 2,
                     scheduler::SchedulerConfig{});
  EXPECT_EQ(t["a"].start, 8000);
  EXPECT_EQ(t["b"].start, 8500);
}

// --- Node failures ---

SimOptions Failing(double mtbf, uint64_t seed) {
  SimOptions o;
  o.runtime_estimate = 0;
  o.node_mtbf_seconds = mtbf;
  o.failure_seed = seed;
  o.grace_seconds = 30;
  o.restart_cost_seconds = 30;
  o.checkpoint_interval_seconds = 600;
  o.node_timeout_seconds = 10;
  return o;
}

TEST(SimulatorNodeFailures, AFailureRequeuesTheGangWhichFinishesLaterByTheLostWork) {
  // 3 nodes of 4 GPUs; g (8 GPUs, 3,600 s) runs on the first two from 0. Seed 4 fails one of
  // them (noticed at T = 2,419 s) while g runs, and nothing else fails until g ends. g's work
  // stopped at T - 10 s (the node timeout); its checkpoints (every 600 s) keep floor((T - 10) /
  // 600) x 600 s of it. Its other task stops through the 30 s grace; then the gang is requeued and
  // starts at once on node-2 and the survivor, paying 30 s to restart.
  SimOptions o = Failing(4 * 3600, 4);
  SimResult r;
  auto t = Simulated("g,0,3600,8,,,,,,\n", 3, 4, scheduler::SchedulerConfig{}, o, &r);
  ASSERT_FALSE(r.failure_log.empty());
  auto [at, node] = r.failure_log.front();
  ASSERT_TRUE(node == "node-0000" || node == "node-0001") << node << " at " << at;
  ASSERT_LT(at, 3600);
  for (size_t i = 1; i < r.failure_log.size(); ++i) {
    ASSERT_GT(r.failure_log[i].first, t["g"].end) << "a second failure would change the sums";
  }
  double kept = std::floor((at - 10) / 600) * 600;
  ASSERT_GT(kept, 0) << "a failure after a checkpoint shows that it keeps the work before it";
  EXPECT_EQ(t["g"].start, 0);
  EXPECT_DOUBLE_EQ(t["g"].end, at + 30 + (3600 - kept) + 30);
  const JobRecord& g = r.jobs[0];
  EXPECT_EQ(g.attempts, 2);
  EXPECT_EQ(g.node_failures, 1);
  EXPECT_EQ(g.preemptions, 0) << "a lost node is not a preemption";
  EXPECT_FALSE(g.failed);
  EXPECT_DOUBLE_EQ(g.queued, 0) << "requeued and restarted in the same instant";
  // It lost the work since its checkpoint, the node timeout included, and the restart, on 8 GPUs.
  EXPECT_DOUBLE_EQ(g.failure_lost_gpu_seconds, (at - kept + 30) * 8);
  EXPECT_EQ(g.lost_gpu_seconds, 0);
  Figures f = Summarize(r);
  EXPECT_TRUE(f.node_failures_simulated);
  EXPECT_EQ(f.node_failures, r.failure_log.size());
  EXPECT_EQ(f.jobs_hit_by_failures, 1u);
  EXPECT_EQ(f.finished, 1u);
  EXPECT_DOUBLE_EQ(f.failure_lost_gpu_seconds, g.failure_lost_gpu_seconds);
  EXPECT_EQ(f.lost_gpu_seconds, 0);
  EXPECT_THAT(FiguresTable({f}), ::testing::HasSubstr("GPU-h failed"));
  // Without failures it ends at 3,600, and the table has no failure columns.
  SimResult plain;
  auto without =
      Simulated("g,0,3600,8,,,,,,\n", 3, 4, scheduler::SchedulerConfig{}, Failing(0, 3), &plain);
  EXPECT_EQ(without["g"].end, 3600);
  EXPECT_TRUE(plain.failure_log.empty());
  EXPECT_THAT(FiguresTable({Summarize(plain)}),
              ::testing::Not(::testing::HasSubstr("GPU-h failed")));
}

std::string ManyJobs(int n) {
  std::string rows;
  for (int i = 0; i < n; ++i) {
    rows += fmt::format("j{},{},{},{},,,,,,\n", i, i * 37 % 1000, 600 + i * 113 % 5000,
                        std::vector<int>{1, 1, 2, 4, 8}[static_cast<size_t>(i % 5)]);
  }
  return rows;
}

TEST(SimulatorNodeFailures, TheSameSeedGivesTheSameFailuresAndNoOtherDrawMoves) {
  std::string rows = ManyJobs(200);
  SimResult a, b, c;
  Simulated(rows, 4, 8, scheduler::SchedulerConfig{}, Failing(6 * 3600, 7), &a);
  Simulated(rows, 4, 8, scheduler::SchedulerConfig{}, Failing(6 * 3600, 7), &b);
  Simulated(rows, 4, 8, scheduler::SchedulerConfig{}, Failing(6 * 3600, 8), &c);
  ASSERT_GT(a.node_failures, 0u);
  EXPECT_GT(Summarize(a).jobs_hit_by_failures, 0u);
  EXPECT_EQ(a.failure_log, b.failure_log);
  EXPECT_EQ(JobsCsv(a), JobsCsv(b));
  EXPECT_NE(a.failure_log, c.failure_log) << "another seed, other failures";
  // Failures that come too late to hit anything change nothing at all.
  SimResult never, late;
  Simulated(rows, 4, 8, scheduler::SchedulerConfig{}, Failing(0, 7), &never);
  Simulated(rows, 4, 8, scheduler::SchedulerConfig{}, Failing(1e15, 7), &late);
  EXPECT_TRUE(late.failure_log.empty());
  EXPECT_EQ(JobsCsv(late), JobsCsv(never));
  EXPECT_NE(JobsCsv(a), JobsCsv(never));
}

TEST(SimulatorNodeFailures, NodesThatNeverComeBackShrinkTheCluster) {
  // 2 nodes of 1 GPU, 30 jobs of an hour: once a node has failed for good, at most one job runs
  // at a time; if both fail, the jobs left can never run and are refused as stuck.
  std::string rows;
  for (int i = 0; i < 30; ++i) rows += fmt::format("j{},0,3600,1,,,,,,\n", i);
  SimOptions o = Failing(20 * 3600, 1);
  o.node_repair_seconds = std::numeric_limits<double>::infinity();
  SimResult r;
  Simulated(rows, 2, 1, scheduler::SchedulerConfig{}, o, &r);
  ASSERT_FALSE(r.failure_log.empty());
  ASSERT_LE(r.failure_log.size(), 2u);
  if (r.failure_log.size() == 2) {
    EXPECT_NE(r.failure_log[0].second, r.failure_log[1].second) << "a node fails once";
  }
  EXPECT_EQ(r.down_gpus_at_end, static_cast<int64_t>(r.failure_log.size()));
  double first = r.failure_log.front().first;
  int64_t most_after = 0;
  for (const auto& s : r.samples) {
    if (s.time > first) most_after = std::max(most_after, s.used_gpus);
  }
  EXPECT_EQ(most_after, 1) << "one GPU is left after the first failure";
  Figures f = Summarize(r);
  if (r.failure_log.size() == 2) {
    EXPECT_FALSE(r.refused.empty());
    EXPECT_THAT(r.refused.front().second, ::testing::HasSubstr("stuck"));
  }
  EXPECT_EQ(f.finished + f.unfinished, 30u);
  // With repairs (1 h), every job finishes and no GPU is down at the end.
  SimResult repaired;
  Simulated(rows, 2, 1, scheduler::SchedulerConfig{}, Failing(20 * 3600, 1), &repaired);
  EXPECT_EQ(Summarize(repaired).finished, 30u);
  EXPECT_GT(repaired.node_failures, 0u);
}

TEST(SimulatorNodeFailures, AJobOutOfAttemptsEndsFailedAsTheMasterEndsIt) {
  // g (4 GPUs, 20 hours) on node-0000. Seed 4 fails that node every few hours. With
  // restart.max_attempts N, the Nth lost attempt ends g FAILED, when the master notices, with
  // nothing else on that node to wait for.
  const std::string g = "g,0,72000,4,,,,,,\n";
  double first_end = -1;
  for (int max = 1; max <= 3; ++max) {
    SimOptions o = Failing(4 * 3600, 4);
    o.restart.max_attempts = max;
    SimResult r;
    auto t = Simulated(g, 2, 4, scheduler::SchedulerConfig{}, o, &r);
    const JobRecord& job = r.jobs[0];
    EXPECT_TRUE(job.failed) << max;
    EXPECT_EQ(job.node_failures, max);
    EXPECT_EQ(job.attempts, max);
    EXPECT_EQ(r.out_of_attempts, 1u);
    EXPECT_TRUE(std::any_of(r.failure_log.begin(), r.failure_log.end(), [&](const auto& f) {
      return f.first == t["g"].end;
    })) << "g ends when a failure is noticed";
    Figures f = Summarize(r);
    EXPECT_EQ(f.finished, 0u);
    EXPECT_EQ(f.failed, 1u);
    EXPECT_EQ(f.unfinished, 1u);
    if (max > 1) {
      EXPECT_GT(t["g"].end, first_end) << "one more attempt allowed, a later end";
    }
    if (max == 1) {
      first_end = t["g"].end;
      ASSERT_EQ(r.failure_log.front().second, "node-0000") << "where g runs";
      double at = r.failure_log.front().first;
      EXPECT_DOUBLE_EQ(first_end, at);
      // No restart: the work since the checkpoint is lost, and no restart cost is owed.
      EXPECT_DOUBLE_EQ(job.failure_lost_gpu_seconds, (at - std::floor((at - 10) / 600) * 600) * 4);
    }
  }
  // restart.on without node_lost ends it at the first loss, the same way.
  SimOptions off = Failing(4 * 3600, 4);
  off.restart.on = {RestartCause::kFailure, RestartCause::kPreempted};
  SimResult r;
  auto t = Simulated(g, 2, 4, scheduler::SchedulerConfig{}, off, &r);
  EXPECT_TRUE(r.jobs[0].failed);
  EXPECT_EQ(t["g"].end, first_end);
  // With attempts enough, it finishes.
  SimOptions many = Failing(4 * 3600, 4);
  many.restart.max_attempts = 100;
  SimResult done;
  Simulated(g, 2, 4, scheduler::SchedulerConfig{}, many, &done);
  EXPECT_FALSE(done.jobs[0].failed);
  EXPECT_GT(done.jobs[0].node_failures, 3);
  EXPECT_EQ(Summarize(done).finished, 1u);
}

// --- Sweep rows ---

constexpr const char* kSweepHeader =
    "job_id,submit,duration,gpus,team,user,priority,max_runtime,min_gpus,max_gpus,sweep\n";

SimResult SimulatedSweeps(const std::string& rows, ClusterSpec cluster,
                          scheduler::SchedulerConfig policy, SimOptions options = Exact()) {
  auto trace = ParseTrace(std::string(kSweepHeader) + rows, TraceFormat::kCohort);
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_TRUE(trace->skipped.empty()) << trace->skipped[0].reason;
  options.scheduler = policy;
  return Simulate(*trace, cluster, options);
}

const JobRecord& Record(const SimResult& r, const std::string& id) {
  for (const auto& j : r.jobs) {
    if (j.id == id) return j;
  }
  ADD_FAILURE() << "no job " << id;
  return r.jobs.front();
}

TEST(SimulatorSweeps, TrialsAreSubmittedAtMostConcurrencyAtATimeTheNextWhenOneEnds) {
  // 4 GPUs, room for four trials of 1 GPU, but the sweep runs two at a time: its five trials of
  // 100 s go 10-110 (two), 110-210 (two), 210-310. Job a (2 GPUs) runs beside them.
  ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.gpus_per_node = 4;
  SimResult r = SimulatedSweeps(
      "a,0,50,2,,,,,,,\nhp,10,100,1,,,,,,,trials=5;concurrency=2;rungs=1\n", cluster, Fifo(true));
  ASSERT_EQ(r.jobs.size(), 6u) << "a, then the sweep's five trials";
  EXPECT_EQ(r.jobs[0].id, "a");
  for (int k = 1; k <= 5; ++k) {
    const JobRecord& t = Record(r, fmt::format("hp-{}", k));
    double submitted = k <= 2 ? 10 : k <= 4 ? 110 : 210;
    EXPECT_EQ(t.submit, submitted) << k;
    EXPECT_EQ(t.start, submitted) << k;
    EXPECT_EQ(t.end, submitted + 100) << k;
    EXPECT_EQ(t.sweep, "hp");
    EXPECT_EQ(t.rung, 0);
    EXPECT_EQ(t.gpus, 1);
  }
  ASSERT_EQ(r.sweeps.size(), 1u);
  const SweepRecord& s = r.sweeps[0];
  EXPECT_EQ(s.id, "hp");
  EXPECT_EQ(s.trials, 5);
  EXPECT_EQ(s.ended, 5u);
  EXPECT_EQ(s.completed, 5u);
  EXPECT_EQ(s.Makespan(), 300);
  EXPECT_DOUBLE_EQ(s.gpu_seconds, 500);

  Figures f = Summarize(r);
  EXPECT_EQ(f.jobs, 1u) << "trials are the sweep's, not jobs of their own";
  EXPECT_EQ(f.trials, 5u);
  EXPECT_EQ(f.finished, 1u);
  EXPECT_EQ(f.makespan, 310) << "the cluster's makespan counts them";
  ASSERT_EQ(f.sweeps.size(), 1u);
  EXPECT_THAT(SweepsTable({f}), ::testing::HasSubstr("hp"));
  EXPECT_THAT(JobsCsv(r), ::testing::HasSubstr(",hp,0\n"));
}

TEST(SimulatorSweeps, ATrialRunsToItsRungAndTheMarkGoesToTheScheduler) {
  // divisor 2, 2 rungs: a trial stopped at the first rung runs half of its 100 s.
  ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.gpus_per_node = 4;
  SimResult stopped =
      SimulatedSweeps("hp,0,100,1,,,,,,,trials=4;divisor=2;rungs=2;stop=1\n", cluster, Fifo(true));
  SimResult complete =
      SimulatedSweeps("hp,0,100,1,,,,,,,trials=4;divisor=2;rungs=2;stop=0\n", cluster, Fifo(true));
  for (int k = 1; k <= 4; ++k) {
    const JobRecord& s = Record(stopped, fmt::format("hp-{}", k));
    EXPECT_EQ(s.end, 50) << k;
    EXPECT_EQ(s.rung, 0);
    EXPECT_FALSE(s.failed) << "stopped early is not failed";
    EXPECT_EQ(Record(complete, fmt::format("hp-{}", k)).end, 100) << k;
  }
  EXPECT_EQ(stopped.sweeps[0].completed, 0u);
  EXPECT_EQ(complete.sweeps[0].completed, 4u);
}

// Team b (guarantee 2 of 4) borrows: two 1-GPU trials since 0, and job p (2 GPUs) since 5. At
// 200, job x of team a (guarantee 2) reclaims 2 GPUs: marked trials go first; replayed as plain
// jobs, p goes (it has lost the least progress).
TEST(SimulatorSweeps, TrialsBeyondTheGuaranteeAreReclaimedFirstUnlessReplayedAsPlainJobs) {
  ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.gpus_per_node = 4;
  cluster.teams = {TeamQuota{"a", 2, std::nullopt}, TeamQuota{"b", 2, std::nullopt}};
  scheduler::SchedulerConfig config;
  config.las_thresholds = {};
  config.promote_after = config.max_wait = std::chrono::hours(24 * 365);
  std::string rows =
      "s,0,1000,1,b,,,,,,trials=2;concurrency=2;rungs=1\n"
      "p,5,1000,2,b,,,,,,\n"
      "x,200,100,2,a,,,,,,\n";
  SimResult marked = SimulatedSweeps(rows, cluster, config);
  EXPECT_EQ(Record(marked, "s-1").preemptions, 1);
  EXPECT_EQ(Record(marked, "s-2").preemptions, 1);
  EXPECT_EQ(Record(marked, "p").preemptions, 0);
  EXPECT_EQ(marked.sweeps[0].preemptions, 2);

  SimOptions plain = Exact();
  plain.mark_sweep_trials = false;
  SimResult unmarked = SimulatedSweeps(rows, cluster, config, plain);
  EXPECT_EQ(Record(unmarked, "s-1").preemptions, 0);
  EXPECT_EQ(Record(unmarked, "s-2").preemptions, 0);
  EXPECT_EQ(Record(unmarked, "p").preemptions, 1);
  for (const SimResult* r : {&marked, &unmarked}) {
    EXPECT_EQ(Record(*r, "x").start, 230) << "once its victims' grace period is over";
  }
}

TEST(SimulatorSweeps, TheOthersWaitsAreThoseOfJobsSubmittedWhileTheSweepRan) {
  SimResult r;
  auto job = [&](std::string id, double submit, double queued, std::string sweep = "") {
    JobRecord j;
    j.id = std::move(id);
    j.submit = submit;
    j.start = submit + queued;
    j.end = j.start + 10;
    j.queued = queued;
    j.sweep = std::move(sweep);
    r.jobs.push_back(j);
  };
  job("before", 0, 500);
  job("during-1", 100, 10);
  job("during-2", 150, 30);
  job("during-3", 200, 20);
  job("after", 400, 900);
  job("hp-1", 100, 1000, "hp");
  SweepRecord s;
  s.id = "hp";
  s.submit = 100;
  s.end = 300;
  r.sweeps.push_back(s);
  Figures f = Summarize(r);
  EXPECT_EQ(f.jobs, 5u);
  ASSERT_EQ(f.sweeps.size(), 1u);
  EXPECT_EQ(f.sweeps[0].others, 3u) << "neither before it, nor after, nor its trial";
  EXPECT_EQ(f.sweeps[0].others_median_wait, 20);
  EXPECT_EQ(f.sweeps[0].others_p95_wait, 30);
  EXPECT_EQ(f.median_queueing, 30) << "over every job but the trial";
}

TEST(SimulatorSweeps, ASweepWhoseTrialsCouldNeverRunIsRefused) {
  ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.gpus_per_node = 4;
  SimResult r = SimulatedSweeps("hp,0,100,8,,,,,,,trials=3\n", cluster, Fifo(true));
  EXPECT_TRUE(r.jobs.empty());
  EXPECT_TRUE(r.sweeps.empty());
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_EQ(r.refused[0].first, "hp");
  EXPECT_THAT(r.refused[0].second, ::testing::HasSubstr("trials need 8 GPUs each"));
}

}  // namespace
}  // namespace cohort::sim
