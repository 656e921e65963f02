#include "slurm/sbatch_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "model/job_spec_parser.h"
#include "slurm/filename_pattern.h"
#include "slurm/slurm_job.h"

namespace cohort::slurm {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kGi = int64_t{1} << 30;

const SbatchScriptInfo kScript{
    "llm/train.sh", "train.sh", {"--epochs", "3"}, "/home/ada/proj", "/bin/bash"};

SbatchOptions Options(const std::vector<std::string>& args) {
  auto parse = ParseSbatchArguments(args, Origin::CommandLine());
  EXPECT_TRUE(parse.ok()) << parse.status().ToString();
  return parse.ok() ? parse->options : SbatchOptions{};
}

SbatchJob Job(const std::vector<std::string>& args, const SbatchScriptInfo& script = kScript) {
  auto job = SbatchToJob(Options(args), script);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : SbatchJob{};
}

std::string ErrorOf(const std::vector<std::string>& args) {
  auto job = SbatchToJob(Options(args), kScript);
  return job.ok() ? "ok" : job.status().message();
}

const Resources& PerNode(const SbatchJob& job) { return job.spec.tasks.at(0).resources; }

// The spec as the CLI submits it: with a command, and without `team` when it names none.
Json Submitted(const SbatchJob& job) {
  JobSpec spec = job.spec;
  spec.tasks[0].command = {"/bin/bash", "/home/ada/proj/llm/train.sh", "--epochs", "3"};
  Json doc = ToJson(spec);
  if (!job.names_team) doc.erase("team");
  return doc;
}

TEST(SbatchToJob, AScriptWithoutOptionsIsOneTaskOnOneNodeWithTheSpecsDefaults) {
  const SbatchJob job = Job({});
  EXPECT_EQ(job.spec.name, "train.sh");
  EXPECT_FALSE(job.names_team);
  EXPECT_EQ(job.spec.team, JobSpec{}.team);
  EXPECT_EQ(job.spec.priority, kPriorityNormal);
  ASSERT_EQ(job.spec.tasks.size(), 1u);
  const TaskGroupSpec& group = job.spec.tasks[0];
  EXPECT_EQ(group.role, "node");
  EXPECT_EQ(group.replicas, 1);
  EXPECT_EQ(group.resources, (Resources{0, 1000, kDefaultMemoryPerNode}));
  EXPECT_THAT(group.command, IsEmpty());
  EXPECT_EQ(group.workdir, "");
  EXPECT_FALSE(job.spec.max_runtime.has_value());
  EXPECT_FALSE(job.spec.array.has_value());
  EXPECT_THAT(job.spec.depends_on, IsEmpty());
  EXPECT_TRUE(job.spec.constraints.empty());
  EXPECT_THAT(job.warnings, IsEmpty());

  const SlurmSettings& s = job.slurm;
  EXPECT_EQ(s.job_name, "train.sh");
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.ntasks, 1);
  EXPECT_THAT(s.tasks_per_node, ElementsAre(1));
  EXPECT_FALSE(s.tasks_asked);
  EXPECT_EQ(s.cpus_per_node, 1);
  EXPECT_EQ(s.gpus_per_node, 0);
  EXPECT_EQ(s.output_pattern, "slurm-%j.out");
  EXPECT_EQ(s.error_pattern, "");
  EXPECT_EQ(s.workdir, "/home/ada/proj");
  EXPECT_EQ(s.submit_dir, "/home/ada/proj");
  EXPECT_EQ(s.open_mode, OpenMode::kTruncate);
  EXPECT_EQ(s.export_env, ExportSpec{});
}

TEST(SbatchToJob, TheDefaultMemoryIsTheJobSpecsOwn) {
  auto spec = ParseJobSpec("{name: x, tasks: [{role: a, command: [\"true\"]}]}");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tasks[0].resources.memory_bytes, kDefaultMemoryPerNode);
  EXPECT_EQ(spec->tasks[0].resources.milli_cpus, 1000);
}

TEST(SbatchToJob, TheNameIsTheJobNameElseTheScriptsMadeFitForCohort) {
  EXPECT_EQ(Job({"--job-name=llm-ft"}).spec.name, "llm-ft");
  SbatchJob job = Job({"-J", "fine tune/v2"});
  EXPECT_EQ(job.spec.name, "fine-tune-v2");
  EXPECT_EQ(job.slurm.job_name, "fine tune/v2");
  EXPECT_THAT(job.warnings, ElementsAre("--job-name=fine tune/v2: the Cohort job is named "
                                        "\"fine-tune-v2\" (a job name is 1 to 128 letters, "
                                        "digits, '.', '_' or '-', starting with a letter or "
                                        "digit); SLURM_JOB_NAME and %x keep \"fine tune/v2\""));
  job = Job({}, SbatchScriptInfo{"_run me.sh", "_run me.sh", {}, "/tmp", "/bin/sh"});
  EXPECT_EQ(job.spec.name, "run-me.sh");
  EXPECT_THAT(job.warnings, ElementsAre(HasSubstr("the script's name \"_run me.sh\": the Cohort "
                                                  "job is named \"run-me.sh\"")));
  EXPECT_EQ(Job({"-J", "!!!"}).spec.name, "job");
  EXPECT_EQ(Job({"-J", std::string(200, 'a')}).spec.name, std::string(128, 'a'));
  EXPECT_EQ(Job({}, SbatchScriptInfo{}).spec.name, "sbatch");
}

TEST(SbatchToJob, APartitionIsTheTeam) {
  const SbatchJob job = Job({"--partition=research"});
  EXPECT_EQ(job.spec.team, "research");
  EXPECT_TRUE(job.names_team);
  EXPECT_EQ(job.slurm.partition, "research");
  EXPECT_EQ(ErrorOf({"-p", "gpu,cpu"}),
            "--partition=gpu,cpu: a Cohort job runs in one team; give one partition (a "
            "partition is a Cohort team)");
  EXPECT_THAT(ErrorOf({"-p", "big gpu"}),
              HasSubstr("--partition=big gpu: \"big gpu\" is not a valid team"));
}

TEST(SbatchToJob, AQosIsAPriority) {
  EXPECT_EQ(Job({"--qos=low"}).spec.priority, kPriorityLow);
  EXPECT_EQ(Job({"--qos=normal"}).spec.priority, kPriorityNormal);
  EXPECT_EQ(Job({"-q", "HIGH"}).spec.priority, kPriorityHigh);
  EXPECT_EQ(Job({"-q", "250"}).spec.priority, 250);
  EXPECT_EQ(Job({"-q", "-1000"}).spec.priority, kMinPriority);
  EXPECT_EQ(Job({"-q", "high"}).slurm.qos, "high");
  EXPECT_EQ(ErrorOf({"--qos=premium"}),
            "--qos=premium: not a Cohort priority; give low, normal, high or an integer from "
            "-1000 to 1000 (a QOS is a priority on Cohort)");
  EXPECT_THAT(ErrorOf({"--qos=1001"}), HasSubstr("--qos=1001: not a Cohort priority"));
}

TEST(SbatchToJob, OneTaskPerNodeEachHoldingWhatItsTasksNeed) {
  const SbatchJob job = Job({"-N", "2", "--ntasks-per-node=4", "-c", "8"});
  EXPECT_EQ(job.spec.tasks[0].replicas, 2);
  EXPECT_EQ(PerNode(job).milli_cpus, 32'000);
  EXPECT_EQ(job.slurm.nodes, 2);
  EXPECT_EQ(job.slurm.ntasks, 8);
  EXPECT_THAT(job.slurm.tasks_per_node, ElementsAre(4, 4));
  EXPECT_TRUE(job.slurm.tasks_asked);
  EXPECT_EQ(job.slurm.ntasks_per_node, 4);
  EXPECT_EQ(job.slurm.cpus_per_task, 8);
  EXPECT_EQ(job.slurm.cpus_per_node, 32);
  EXPECT_THAT(job.warnings, IsEmpty());
}

TEST(SbatchToJob, TasksThatDoNotDivideGoFirstToTheFirstNodesAsInSlurm) {
  const SbatchJob job = Job({"-N", "4", "-n", "10", "-c", "2"});
  EXPECT_THAT(job.slurm.tasks_per_node, ElementsAre(3, 3, 2, 2));
  EXPECT_EQ(job.slurm.ntasks, 10);
  EXPECT_EQ(PerNode(job).milli_cpus, 6000);  // what three tasks need, on every node
  EXPECT_THAT(job.warnings,
              ElementsAre("--ntasks=10: 3(x2),2(x2) tasks per node over --nodes=4 (as Slurm "
                          "places them); each node holds what 3 tasks need, since Cohort's tasks "
                          "of one group are alike"));
  // --ntasks-per-node is then the most on one node.
  EXPECT_THAT(Job({"-N", "2", "-n", "6", "--ntasks-per-node=4"}).slurm.tasks_per_node,
              ElementsAre(3, 3));
  EXPECT_EQ(ErrorOf({"-N", "2", "-n", "10", "--ntasks-per-node=4"}),
            "--ntasks=10: 10 tasks do not fit on --nodes=2 at --ntasks-per-node=4 (8 at most)");
}

TEST(SbatchToJob, TheNodeCountFollowsSlurm) {
  // MIN-MAX: the minimum.
  SbatchJob job = Job({"--nodes=2-4"});
  EXPECT_EQ(job.spec.tasks[0].replicas, 2);
  EXPECT_THAT(job.warnings,
              ElementsAre("--nodes=2-4: Cohort starts the job on the minimum, 2 nodes"));
  // --ntasks and --ntasks-per-node without --nodes: as many nodes as they need.
  job = Job({"-n", "10", "--ntasks-per-node=4"});
  EXPECT_EQ(job.slurm.nodes, 3);
  EXPECT_THAT(job.slurm.tasks_per_node, ElementsAre(4, 3, 3));
  // --ntasks alone: one node (Slurm may spread them; Cohort cannot know how).
  job = Job({"-n", "8"});
  EXPECT_EQ(job.slurm.nodes, 1);
  EXPECT_THAT(job.slurm.tasks_per_node, ElementsAre(8));
  EXPECT_THAT(job.warnings, ElementsAre(HasSubstr("--ntasks=8: without --nodes, Cohort runs "
                                                  "every task on one node")));
  EXPECT_THAT(Job({"-n", "1"}).warnings, IsEmpty());
  // Fewer tasks than nodes: as many nodes as tasks, with Slurm's warning.
  job = Job({"-N", "4", "-n", "2"});
  EXPECT_EQ(job.spec.tasks[0].replicas, 2);
  EXPECT_THAT(job.slurm.tasks_per_node, ElementsAre(1, 1));
  EXPECT_THAT(job.warnings, ElementsAre("--ntasks=2: fewer tasks than --nodes=4; the job runs "
                                        "on 2 nodes, as in Slurm"));
  EXPECT_EQ(ErrorOf({"-N", "1025"}),
            "--nodes=1025: a Cohort job has at most 1024 tasks, here one per node");
}

TEST(SbatchToJob, GpusPerNodeComeFromTheFirstGpuOptionGiven) {
  EXPECT_EQ(PerNode(Job({"--gpus-per-node=4"})).gpus, 4);
  EXPECT_EQ(PerNode(Job({"--gres=gpu:2"})).gpus, 2);
  EXPECT_EQ(PerNode(Job({"--gres=gpu"})).gpus, 1);
  EXPECT_EQ(PerNode(Job({"--gpus-per-task=2", "--ntasks-per-node=4"})).gpus, 8);
  EXPECT_EQ(PerNode(Job({"--gpus-per-task=1", "-N", "2", "-n", "3"})).gpus, 2);
  EXPECT_EQ(PerNode(Job({"-G", "8", "-N", "2"})).gpus, 4);
  EXPECT_EQ(PerNode(Job({"--gres=none", "--gpus-per-task=1"})).gpus, 1);
  EXPECT_EQ(PerNode(Job({"--gres=none"})).gpus, 0);
  // Other GPU options given with the one that decides agree with it.
  const SbatchJob job =
      Job({"-N", "2", "--ntasks-per-node=4", "--gpus-per-node=8", "--gpus-per-task=2", "-G", "16"});
  EXPECT_EQ(PerNode(job).gpus, 8);
  EXPECT_EQ(job.slurm.gpus_per_node, 8);
  EXPECT_EQ(job.slurm.gpus_per_task, 2);
  EXPECT_EQ(job.slurm.asked_gpus, (GpuRequest{"", 16}));
  EXPECT_EQ(job.slurm.asked_gpus_per_node, (GpuRequest{"", 8}));
  EXPECT_EQ(job.slurm.asked_gpus_per_task, (GpuRequest{"", 2}));
  EXPECT_THAT(job.warnings, IsEmpty());
  EXPECT_EQ(PerNode(Job({"-N", "2", "-n", "3", "--gpus-per-task=1", "--gpus=3"})).gpus, 2);
}

TEST(SbatchToJob, AGpuTypeIsTheGpuModel) {
  SbatchJob job = Job({"--gres=gpu:a100:2"});
  EXPECT_EQ(PerNode(job).gpus, 2);
  EXPECT_EQ(job.spec.constraints.gpu_model, "a100");
  EXPECT_THAT(job.warnings, ElementsAre("--gres=gpu:a100:2: the job runs only on nodes whose GPU "
                                        "model, as `cohort nodes` shows it, is \"a100\""));
  job = Job({"--gpus-per-node=h100:8", "--gpus-per-task=1", "--ntasks-per-node=8"});
  EXPECT_EQ(job.spec.constraints.gpu_model, "h100");
  EXPECT_EQ(job.warnings.size(), 1u);
  EXPECT_EQ(ErrorOf({"--gpus-per-node=a100:4", "--gpus-per-task=v100:1"}),
            "--gpus-per-node=a100:4 and --gpus-per-task=v100:1 ask for different GPU types; a "
            "Cohort job has one");
}

TEST(SbatchToJob, GpusThatCannotBePlacedAsAskedAreErrors) {
  EXPECT_EQ(ErrorOf({"--gpus=3", "--nodes=2"}),
            "--gpus=3: 3 GPUs cannot be spread evenly over --nodes=2; use --gpus-per-node");
  EXPECT_EQ(ErrorOf({"--gpus=3", "-n", "4", "--ntasks-per-node=2"}),
            "--gpus=3: 3 GPUs cannot be spread evenly over 2 nodes; use --gpus-per-node");
  EXPECT_EQ(ErrorOf({"--gpus-per-node=72"}),
            "--gpus-per-node=72: 72 GPUs per node; a Cohort node has at most 64");
  EXPECT_EQ(ErrorOf({"--gpus-per-task=2", "--ntasks-per-node=4", "--gres=gpu:4"}),
            "--gpus-per-task=2: 4 tasks per node need 8 GPUs per node; --gres=gpu:4 gives 4");
  EXPECT_EQ(ErrorOf({"-N", "2", "--gpus-per-node=4", "--gpus=16"}),
            "--gpus=16: --gpus-per-node=4 on --nodes=2 gives the job 8 GPUs, not 16; give one of "
            "them");
}

TEST(SbatchToJob, CpusPerNodeAreCpusPerTaskOrPerGpu) {
  EXPECT_EQ(PerNode(Job({"-c", "4"})).milli_cpus, 4000);
  SbatchJob job = Job({"--cpus-per-gpu=6", "--gpus-per-node=4", "--ntasks-per-node=4"});
  EXPECT_EQ(PerNode(job).milli_cpus, 24'000);
  EXPECT_EQ(job.slurm.cpus_per_gpu, 6);
  EXPECT_FALSE(job.slurm.cpus_per_task.has_value());
  EXPECT_EQ(ErrorOf({"--cpus-per-gpu=6"}),
            "--cpus-per-gpu=6: the job asks for no GPUs; use --cpus-per-task");
  EXPECT_EQ(ErrorOf({"-c", "9000", "--ntasks-per-node=2"}),
            "--cpus-per-task=9000: 18000 CPUs per node; a Cohort node has at most 16384");
}

TEST(SbatchToJob, MemoryPerNodeIsMemOrPerCpuOrPerGpu) {
  EXPECT_EQ(PerNode(Job({"--mem=64G"})).memory_bytes, 64 * kGi);
  EXPECT_EQ(PerNode(Job({"--mem-per-cpu=2G", "-c", "4", "--ntasks-per-node=2"})).memory_bytes,
            16 * kGi);
  SbatchJob job = Job({"--mem-per-gpu=40G", "--gpus-per-node=2"});
  EXPECT_EQ(PerNode(job).memory_bytes, 80 * kGi);
  EXPECT_EQ(job.slurm.mem_per_gpu, 40 * kGi);
  EXPECT_FALSE(job.slurm.mem_per_node.has_value());
  EXPECT_EQ(Job({"--mem=500"}).slurm.mem_per_node, 500 << 20);
}

TEST(SbatchToJob, MemoryThatCannotBePlacedIsRefusedSayingWhy) {
  EXPECT_EQ(ErrorOf({"--mem=0"}),
            "--mem=0: Slurm's \"all of the node's memory\" is not supported: Cohort places a job "
            "by the memory it asks for; give a size, e.g. --mem=64G");
  EXPECT_THAT(ErrorOf({"--mem-per-cpu=0"}), HasSubstr("--mem-per-cpu=0: Slurm's \"all of"));
  EXPECT_EQ(ErrorOf({"--mem-per-gpu=8G"}),
            "--mem-per-gpu=8G: the job asks for no GPUs; use --mem or --mem-per-cpu");
  EXPECT_EQ(ErrorOf({"--mem=100T"}), "--mem=100T: 100Ti per node; a Cohort node has at most 64Ti");
  EXPECT_EQ(ErrorOf({"--mem-per-cpu=1T", "-c", "128"}),
            "--mem-per-cpu=1T: times 128 CPUs per node, over 64Ti, the most a Cohort node has");
}

TEST(SbatchToJob, TheTimeLimitIsTheMaxRuntime) {
  EXPECT_EQ(Job({"--time=1-00:00:00"}).spec.max_runtime, hours(24));
  EXPECT_EQ(Job({"-t", "90"}).slurm.time_limit, minutes(90));
  EXPECT_FALSE(Job({"--time=UNLIMITED"}).spec.max_runtime.has_value());
  EXPECT_FALSE(Job({"--time=UNLIMITED"}).slurm.time_limit.has_value());
}

TEST(SbatchToJob, ABatchJobIsRequeuedOnNodeFailureAndPreemptionNeverOnItsOwnFailure) {
  const RestartPolicy requeued = Job({}).spec.restart;
  EXPECT_THAT(requeued.on, ElementsAre(RestartCause::kNodeLost, RestartCause::kPreempted));
  EXPECT_EQ(requeued.max_attempts, kDefaultMaxAttempts);
  EXPECT_EQ(Job({"--requeue"}).spec.restart, requeued);
  const RestartPolicy once = Job({"--no-requeue"}).spec.restart;
  EXPECT_THAT(once.on, IsEmpty());
  EXPECT_EQ(once.max_attempts, 1);
}

TEST(SbatchToJob, DependenciesAndArrays) {
  using C = DependencyCondition;
  SbatchJob job = Job({"--dependency=afterok:12,afternotok:13,afterany:14"});
  EXPECT_THAT(job.spec.depends_on,
              ElementsAre(Dependency{12, C::kSuccess}, Dependency{13, C::kFailure},
                          Dependency{14, C::kEnd}));
  EXPECT_THAT(Job({"-d", "afterok:12", "--kill-on-invalid-dep=yes"}).warnings, IsEmpty());
  EXPECT_THAT(Job({"-d", "afterok:12", "--kill-on-invalid-dep=no"}).warnings,
              ElementsAre(HasSubstr("--kill-on-invalid-dep=no: ignored: Cohort ends a job whose "
                                    "dependencies can never be met")));

  job = Job({"--array=0-9%2"});
  ASSERT_TRUE(job.spec.array.has_value());
  EXPECT_EQ(job.spec.array->indices.size(), 10u);
  EXPECT_EQ(job.spec.array->max_parallel, 2);
  EXPECT_EQ(job.slurm.array_text, "0-9%2");
  EXPECT_EQ(job.slurm.array_step, 1);
  EXPECT_EQ(job.slurm.output_pattern, "slurm-%A_%a.out");
  job = Job({"-a", "0-99:4,200"});
  EXPECT_EQ(job.slurm.array_step, 4);
  EXPECT_EQ(job.spec.array->indices.size(), 26u);
}

TEST(SbatchToJob, FilesAndWhereTheScriptRuns) {
  SbatchJob job =
      Job({"-o", "logs/%x-%j.out", "-e", "logs/%x-%j.err", "-i", "in.txt", "--open-mode=append",
           "-D", "runs/a", "--export=SEED=1", "--signal=B:USR1@120", "-A", "proj42"});
  const SlurmSettings& s = job.slurm;
  EXPECT_EQ(s.output_pattern, "logs/%x-%j.out");
  EXPECT_EQ(s.error_pattern, "logs/%x-%j.err");
  EXPECT_EQ(s.input_pattern, "in.txt");
  EXPECT_EQ(s.open_mode, OpenMode::kAppend);
  EXPECT_EQ(s.workdir, "/home/ada/proj/runs/a");
  EXPECT_EQ(s.export_env, (ExportSpec{ExportSpec::Base::kNone, {{"SEED", "1"}}}));
  ASSERT_TRUE(s.signal.has_value());
  EXPECT_EQ(s.signal->name, "USR1");
  EXPECT_EQ(s.account, "proj42");
  EXPECT_EQ(job.spec.tasks[0].workdir, "");  // the CLI's to fill in
  EXPECT_EQ(Job({"-D", "/scratch/ada"}).slurm.workdir, "/scratch/ada");
}

TEST(SbatchToJob, EachOptionWithoutEffectIsWarnedAboutOnce) {
  const std::vector<std::string> args = {"--exclusive",
                                         "--constraint=a100&ib",
                                         "--comment=ablation",
                                         "-A",
                                         "proj42",
                                         "--mail-type=END",
                                         "--mail-user=ada@lab.org",
                                         "--signal=R:USR1",
                                         "--hint=nomultithread"};
  auto parse = ParseSbatchArguments(args, Origin::CommandLine());
  ASSERT_TRUE(parse.ok());
  auto job = SbatchToJob(parse->options, kScript);
  ASSERT_TRUE(job.ok());
  EXPECT_THAT(job->warnings,
              ElementsAre("--exclusive: ignored: a Cohort job holds what it asks for, and other "
                          "jobs may use the rest of its nodes",
                          "--constraint=a100&ib: ignored: Cohort nodes have no Slurm features; "
                          "ask for a GPU model with --gres=gpu:TYPE:N",
                          "--comment=ablation: ignored: Cohort keeps no comment",
                          "--signal=R:...: the R flag is ignored: Cohort has no reservations to "
                          "overlap"));
  // With the parse's own, every option is named once.
  std::vector<std::string> all = parse->warnings;
  all.insert(all.end(), job->warnings.begin(), job->warnings.end());
  for (const std::string option : {"--exclusive", "--constraint", "--comment", "-A", "--mail-type",
                                   "--mail-user", "--signal", "--hint"}) {
    EXPECT_EQ(std::count_if(all.begin(), all.end(),
                            [&](const std::string& w) { return w.find(option) != w.npos; }),
              1)
        << option;
  }
}

TEST(SbatchToJob, ListsEveryProblemAtOnce) {
  auto job = SbatchToJob(Options({"--qos=premium", "-p", "a,b", "--mem=0", "-G", "3", "-N", "2"}),
                         kScript);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().details(),
              ElementsAre(HasSubstr("--partition=a,b"), HasSubstr("--qos=premium"),
                          HasSubstr("--gpus=3"), HasSubstr("--mem=0")));
  EXPECT_THAT(job.status().message(), HasSubstr("; --qos=premium"));
}

constexpr std::string_view kLlmScript = R"(#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 --cpus-per-task=8 --mem=64G
#SBATCH --time=1-00:00:00 --job-name=llm --partition=research --qos=high
#SBATCH --array=0-9%2 --dependency=afterok:12 --output=logs/%x-%A_%a.out

srun python train.py
)";

SbatchJob LlmJob() {
  auto script = ReadBatchScript(kLlmScript);
  EXPECT_TRUE(script.ok());
  auto parse = ParseScriptDirectives(*script);
  EXPECT_TRUE(parse.ok()) << parse.status().ToString();
  EXPECT_THAT(parse->warnings, IsEmpty());
  auto job = SbatchToJob(parse->options, kScript);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : SbatchJob{};
}

TEST(SbatchToJob, AMultiNodeScriptIsAJobSpecTheModelAccepts) {
  const SbatchJob job = LlmJob();
  const JobSpec& spec = job.spec;
  EXPECT_EQ(spec.name, "llm");
  EXPECT_EQ(spec.team, "research");
  EXPECT_TRUE(job.names_team);
  EXPECT_EQ(spec.priority, kPriorityHigh);
  EXPECT_EQ(spec.tasks[0].replicas, 2);
  EXPECT_EQ(spec.tasks[0].resources, (Resources{4, 32'000, 64 * kGi}));
  EXPECT_EQ(spec.max_runtime, hours(24));
  EXPECT_EQ(spec.array, (ArraySpec{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 2}));
  EXPECT_THAT(spec.depends_on, ElementsAre(Dependency{12, DependencyCondition::kSuccess}));
  EXPECT_THAT(job.warnings, IsEmpty());

  // With a command, as the CLI will give it, the model's parser takes it as it is.
  const Json doc = Submitted(job);
  auto parsed = ParseJobSpecJson(doc);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(ToJson(*parsed), doc);
  bool names_team = false;
  auto from_text = ParseJobSpec(doc.dump(), "sbatch", &names_team);
  ASSERT_TRUE(from_text.ok()) << from_text.status().ToString();
  EXPECT_TRUE(names_team);
  EXPECT_EQ(SpecDigest(*from_text), SpecDigest(*parsed));
}

TEST(SbatchToJob, EveryJobItMakesIsOneTheModelAccepts) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"-J", "odd name!", "--no-requeue", "-t", "UNLIMITED"},
           {"-N", "4", "-n", "10", "--gres=gpu:a100:2", "--mem-per-gpu=40G", "-q", "-5"},
           {"-N", "1024", "--cpus-per-gpu=16", "--gpus-per-node=64", "--mem-per-cpu=64G"},
           {"-a", "1-999:2%5", "-d", "afterany:1,afterok:2:3"}}) {
    const SbatchJob job = Job(args);
    bool names_team = true;
    auto parsed = ParseJobSpec(Submitted(job).dump(), "sbatch", &names_team);
    EXPECT_TRUE(parsed.ok()) << (args.empty() ? "" : args[0]) << ": " << parsed.status().ToString();
    EXPECT_FALSE(names_team);
  }
}

TEST(SlurmJobInfoOf, GivesTheBatchScriptSlurmsVariables) {
  const SbatchJob job = LlmJob();
  SlurmJobInfo info = SlurmJobInfoOf(job);
  info.job_id = 77;
  info.nodes = {"gpu01", "gpu02"};
  info.array->array_job_id = 74;
  info.array->task_id = 3;
  info.submit_host = "login1";
  info.cluster_name = "cohort";
  auto env = BatchScriptEnvironment(info, {0, 4, "0,1,2,3"});
  EXPECT_EQ(env["SLURM_JOB_NAME"], "llm");
  EXPECT_EQ(env["SLURM_NNODES"], "2");
  EXPECT_EQ(env["SLURM_NTASKS"], "8");
  EXPECT_EQ(env["SLURM_NTASKS_PER_NODE"], "4");
  EXPECT_EQ(env["SLURM_TASKS_PER_NODE"], "4(x2)");
  EXPECT_EQ(env["SLURM_JOB_CPUS_PER_NODE"], "32(x2)");
  EXPECT_EQ(env["SLURM_CPUS_PER_TASK"], "8");
  EXPECT_EQ(env["SLURM_GPUS_PER_NODE"], "4");
  EXPECT_EQ(env["SLURM_MEM_PER_NODE"], "65536");
  EXPECT_EQ(env["SLURM_JOB_PARTITION"], "research");
  EXPECT_EQ(env["SLURM_JOB_QOS"], "high");
  EXPECT_EQ(env["SLURM_SUBMIT_DIR"], "/home/ada/proj");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_COUNT"], "10");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_MIN"], "0");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_MAX"], "9");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_STEP"], "1");
  EXPECT_FALSE(env.contains("SLURM_JOB_ACCOUNT"));

  FilenameFields fields;
  fields.job_id = 77;
  fields.array_job_id = 74;
  fields.array_task_id = 3;
  fields.job_name = job.slurm.job_name;
  EXPECT_EQ(ExpandFilenamePattern(job.slurm.output_pattern, fields), "logs/llm-74_3.out");
}

TEST(SlurmJobInfoOf, SetsOnlyWhatTheJobAskedFor) {
  const SlurmJobInfo info = SlurmJobInfoOf(Job({}));
  EXPECT_EQ(info.job_name, "train.sh");
  EXPECT_THAT(info.tasks_per_node, ElementsAre(1));
  EXPECT_THAT(info.cpus_per_node, ElementsAre(1));
  EXPECT_FALSE(info.tasks_asked);
  EXPECT_FALSE(info.cpus_per_task.has_value());
  EXPECT_FALSE(info.gpus_per_node.has_value());
  EXPECT_FALSE(info.mem_per_node.has_value());
  EXPECT_FALSE(info.array.has_value());
  EXPECT_FALSE(info.account.has_value());
  EXPECT_FALSE(info.qos.has_value());
  EXPECT_EQ(info.partition, "");
  EXPECT_EQ(SlurmJobInfoOf(Job({"--gres=gpu:2"})).gpus_per_node, std::nullopt);  // as Slurm
}

TEST(SlurmJobSpec, IsAJobOfFrameworkSlurmWithItsScriptThatTheModelAccepts) {
  SbatchJob job = LlmJob();
  job.slurm.export_env.variables = {
      {"EPOCHS", "3"}, {"HOME_DIR", std::nullopt}, {"NOT_SET", std::nullopt}};
  SlurmSection section = SlurmSectionOf(job, kScript, std::string(kLlmScript), "login1");
  EXPECT_EQ(section.script, kLlmScript);
  EXPECT_EQ(section.script_name, "llm/train.sh");
  EXPECT_THAT(section.args, ElementsAre("--epochs", "3"));
  EXPECT_EQ(section.job_name, "llm");
  EXPECT_THAT(section.tasks_per_node, ElementsAre(4, 4));
  EXPECT_EQ(section.gpus_per_node, "4");
  EXPECT_EQ(section.output, "logs/%x-%A_%a.out");
  EXPECT_EQ(section.submit_host, "login1");
  JobSpec spec = SlurmJobSpec(job, section, {{"HOME_DIR", "/home/ada"}, {"OTHER", "x"}});
  EXPECT_EQ(spec.framework, Framework::kSlurm);
  EXPECT_TRUE(spec.tasks[0].command.empty());
  EXPECT_EQ(spec.tasks[0].workdir, "/home/ada/proj");
  // Only what --export names; a name the submitter has no value for is left out, as in Slurm.
  EXPECT_EQ(spec.tasks[0].env,
            (std::map<std::string, std::string>{{"EPOCHS", "3"}, {"HOME_DIR", "/home/ada"}}));
  auto parsed = ParseJobSpecJson(ToJson(spec));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->slurm, spec.slurm);
  EXPECT_TRUE(parsed->tasks[0].distinct_nodes);
  // What the tasks' variables come from is what sbatch decided.
  const SlurmJobInfo from_section = SlurmJobInfoOf(*parsed->slurm, *parsed);
  const SlurmJobInfo from_options = SlurmJobInfoOf(job);
  EXPECT_EQ(from_section.gpus_per_node, from_options.gpus_per_node);
  EXPECT_EQ(from_section.mem_per_node, from_options.mem_per_node);
  EXPECT_EQ(from_section.tasks_per_node, from_options.tasks_per_node);
  EXPECT_EQ(from_section.array->count, 10);
  EXPECT_EQ(from_section.time_limit, hours(24));
}

}  // namespace
}  // namespace cohort::slurm
