// The advisor against real daemons (docs/observability.md, "Advice"): an agent on the fake NVML
// whose GPU load the test sets, a job whose GPU idles while its CPU is saturated (starved), one
// whose GPU does nothing at all (idle), which a master with --reclaim-idle-gpus preempts, and one
// whose GPU idles while it reads a small file over and over (small reads).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "model/json.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;

TEST(Advice, StarvedAndIdleGpusAreToldAndIdleOnesReclaimed) {
  LocalCluster cluster("advice");
  const std::string load_file = cluster.dir() + "/gpu-load";
  // GPU 0: 8% busy (a starved input pipeline); GPU 1: idle.
  std::ofstream(load_file) << "0 8 1048576\n1 0 1048576\n";
  cluster.StartMaster({"--advice-window", "3s", "--idle-gpu-after", "4s", "--reclaim-idle-gpus"});
  cluster.StartAgent("gpu-node", /*gpus=*/-1,
                     {"--nvml-library", FakeNvmlLibrary(), "--sample-interval", "1s"},
                     {{"FAKE_NVML_GPUS", "2"}, {"FAKE_NVML_UTILIZATION_FILE", load_file}});
  // The starved job spins on one core and asks for a tenth of one, so that it saturates what it
  // asked for even when the machine is loaded (with 0.5 it did not, on a 2-core VM under a
  // build: a spinner got a third of a core); it is placed first, on GPU 0.
  JobId starved = cluster.Submit(R"(
name: starved
tasks: [{role: main, resources: {gpus: 1, cpus: 0.1}, command: [python3, -c, 'while True: pass']}]
)");
  cluster.WaitForState(starved, JobState::kRunning);
  JobId idle = cluster.Submit(R"(
name: idle
tasks: [{role: main, resources: {gpus: 1, cpus: 1}, command: [sleep, "600"]}]
restart: {max_attempts: 1}
)");
  cluster.WaitForState(idle, JobState::kRunning);

  ASSERT_TRUE(
      WaitFor([&] { return cluster.EventsText(starved).find("advice:") != std::string::npos; },
              std::chrono::seconds(30)))
      << cluster.EventsText(starved);
  EXPECT_THAT(cluster.EventsText(starved),
              HasSubstr("advice: starved GPUs: GPU 8% busy while 0.1 of 0.1 CPUs are saturated: "
                        "ask for more CPUs, or pack small input files into large shards"));
  // The same text where people look: `cohort why`, and the job's usage for the dashboard.
  auto why = cluster.Cohort({"why", std::to_string(starved)});
  EXPECT_THAT(why.out, HasSubstr("advice: GPU 8% busy while 0.1 of 0.1 CPUs are saturated"));
  auto http = cluster.Http();
  ASSERT_TRUE(http.ok());
  auto usage = (*http)->Request("GET", fmt::format("/api/v1/jobs/{}/usage", starved));
  ASSERT_TRUE(usage.ok());
  EXPECT_THAT(usage->body, HasSubstr(R"("kind":"starved")"));

  // The idle job: told, then preempted by the master (requeued, its failure budget untouched:
  // max_attempts 1 would otherwise fail it), and kept off the only node, whose GPU it left idle,
  // for --idle-gpu-after (tests/integration/idle_reclaim_test.cc has the rest).
  ASSERT_TRUE(WaitFor(
      [&] { return cluster.EventsText(idle).find("idle GPUs reclaimed") != std::string::npos; },
      std::chrono::seconds(30)))
      << cluster.EventsText(idle);
  EXPECT_THAT(cluster.EventsText(idle), HasSubstr("advice: idle GPUs: its GPU has been idle for"));
  Job requeued = cluster.WaitForJob(
      idle, [](const Job& j) { return j.preemptions >= 1 && j.state != JobState::kStopping; });
  EXPECT_NE(requeued.state, JobState::kFailed) << requeued.message;
  EXPECT_EQ(requeued.failures, 0);
  EXPECT_EQ(requeued.excluded_nodes.count("gpu-node"), 1u);
  EXPECT_THAT(cluster.EventsText(idle), HasSubstr("kept off node gpu-node until"));
  // The starved job is not idle: it keeps running.
  EXPECT_EQ(cluster.client().GetJob(starved)->state, JobState::kRunning);
}

// The whole way of a task's reads: the agent's sampler reads /proc/<pid>/io of the task's
// processes, the rates travel in its reports, and the master's advisor names packing.
TEST(Advice, AJobReadingManySmallFilesIsToldToPackThem) {
  LocalCluster cluster("advice-reads");
  const std::string load_file = cluster.dir() + "/gpu-load";
  std::ofstream(load_file) << "0 8 1048576\n";
  cluster.StartMaster({"--advice-window", "3s"});
  cluster.StartAgent("gpu-node", /*gpus=*/-1,
                     {"--nvml-library", FakeNvmlLibrary(), "--sample-interval", "1s"},
                     {{"FAKE_NVML_GPUS", "1"}, {"FAKE_NVML_UTILIZATION_FILE", load_file}});
  // A loader of one 4 KiB file, read whole again and again (a generator: nothing accumulates).
  JobId reader = cluster.Submit(R"yaml(
name: reader
tasks:
- role: main
  resources: {gpus: 1, cpus: 1}
  command: [python3, -c, "import itertools; open('s', 'wb').write(bytes(4096)); any(open('s', 'rb').read() is None for _ in itertools.count())"]
)yaml");
  cluster.WaitForState(reader, JobState::kRunning);
  ASSERT_TRUE(
      WaitFor([&] { return cluster.EventsText(reader).find("advice:") != std::string::npos; },
              std::chrono::seconds(30)))
      << cluster.EventsText(reader);
  EXPECT_THAT(cluster.EventsText(reader),
              HasSubstr("advice: GPUs starved by small reads: GPU 8% busy while its tasks read "
                        "2.0 KiB per read call ("));
  auto why = cluster.Cohort({"why", std::to_string(reader)});
  EXPECT_THAT(why.out, HasSubstr("pack the small input files into large shards with `cohort data "
                                 "pack` and read them with python/cohort_shards.py"));
}

}  // namespace
}  // namespace cohort::testing
