// Issue 30, items 1 and 2: each framework's rendezvous in real tasks on real agents. MPI without
// sshd (mpirun's remote launch through cohort-exec into the workers) and elastic PyTorch through
// torchrun's own rendezvous, each by a real collective; JAX and DeepSpeed by what their tasks
// read.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/strings.h"
#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

bool HaveMpi() {
  return RunCommand({"/usr/bin/python3", "-c", "import mpi4py, numpy"}).exit_code == 0 &&
         RunCommand({"/usr/bin/mpirun", "--version"}).exit_code == 0;
}

const Task* TaskOf(const Job& job, const std::string& role, int index) {
  for (const auto& t : job.tasks) {
    if (t.role == role && t.index == index) return &t;
  }
  return nullptr;
}

// "NAME=value" lines of a task's output.
std::map<std::string, std::string> EnvOf(const std::string& log) {
  std::map<std::string, std::string> env;
  for (const auto& line : Split(log, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos && eq > 0) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

TEST(Mpi, FourRanksOnTwoAgentsAllreduceThroughCohortExecWithNoSshd) {
  ASSERT_TRUE(HaveMpi()) << "Debian's openmpi-bin and python3-mpi4py are needed "
                            "(scripts/setup.sh installs them)";
  LocalCluster cluster("mpi");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  cluster.StartAgent("node-b", 2);
  // The example as a user submits it.
  auto submitted = cluster.Cohort({"submit", SourceDir() + "/examples/mpi-allreduce/job.yaml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  JobId id = std::stoll(submitted.out);
  Job job = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(120));
  ASSERT_EQ(job.state, JobState::kSucceeded) << cluster.EventsText(id) << cluster.Logs(id);
  const Task* w0 = TaskOf(job, "worker", 0);
  const Task* w1 = TaskOf(job, "worker", 1);
  ASSERT_TRUE(w0 && w1);
  EXPECT_NE(w0->node_id, w1->node_id) << "2 GPUs each: one worker per agent";

  std::string launcher = cluster.Logs(id, "launcher/0");
  EXPECT_THAT(launcher, HasSubstr("allreduce over 4 ranks: ok"));
  // Each rank ran inside its worker's allocation: its environment, its GPUs.
  for (int rank = 0; rank < 4; ++rank) {
    int worker = rank / 2;  // Open MPI fills each node's slots in order
    const Task* w = worker == 0 ? w0 : w1;
    EXPECT_THAT(launcher, HasSubstr(fmt::format("rank {}/4 on", rank)));
    EXPECT_THAT(launcher, HasSubstr(fmt::format("in task worker/{} (GPUs {}): sum 10, ok", worker,
                                                JoinGpus(w->gpus))))
        << "rank " << rank;
  }
  // mpirun reached each worker through its exec service, whose log says so.
  for (const char* worker : {"worker/0", "worker/1"}) {
    std::string log = cluster.Logs(id, worker);
    EXPECT_THAT(log, HasSubstr("cohort-exec: serving this task's commands on port")) << worker;
    EXPECT_THAT(log, HasSubstr("cohort-exec: running for")) << worker;
    EXPECT_THAT(log, HasSubstr("orted")) << worker;
  }
  EXPECT_THAT(cluster.EventsText(id), HasSubstr("the launcher succeeded; stopping the workers"));
}

// `cohort run --framework mpi`: the command is mpirun's, in a launcher; --replicas workers.
TEST(Mpi, CohortRunMakesTheLauncherAndTheWorkers) {
  ASSERT_TRUE(HaveMpi());
  LocalCluster cluster("mpirun");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  cluster.StartAgent("node-b", 2);
  auto run = cluster.Cohort(
      {"run", "--framework", "mpi", "--replicas", "2", "--gpus", "1", "--env",
       "OMPI_ALLOW_RUN_AS_ROOT=1", "--env", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "--no-context",
       "--", "mpirun", "/usr/bin/python3", "-c",
       "from mpi4py import MPI; c = MPI.COMM_WORLD; s = c.allreduce(c.Get_rank() + 1); "
       "print(f'rank {c.Get_rank()} of {c.Get_size()}: sum {s}')"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  JobId id = std::stoll(run.out);
  Job job = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(120));
  ASSERT_EQ(job.state, JobState::kSucceeded) << cluster.EventsText(id) << cluster.Logs(id);
  EXPECT_EQ(job.spec.tasks.size(), 2u);
  EXPECT_EQ(job.spec.tasks[0].role, "launcher");
  EXPECT_EQ(job.spec.tasks[1].replicas, 2);
  std::string launcher = cluster.Logs(id, "launcher/0");
  EXPECT_THAT(launcher, HasSubstr("rank 0 of 2: sum 3"));
  EXPECT_THAT(launcher, HasSubstr("rank 1 of 2: sum 3"));
}

TEST(Mpi, ARankThatFailsFailsTheWholeGang) {
  ASSERT_TRUE(HaveMpi());
  LocalCluster cluster("mpifail");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  cluster.StartAgent("node-b", 2);
  // Rank 3 dies without finalizing (a crash); the others wait for it in a barrier.
  JobId id = cluster.Submit(R"yaml(
name: mpi-fail
framework: mpi
tasks:
  - role: launcher
    resources: {cpus: 0.5, memory: 256Mi}
    command: [mpirun, /usr/bin/python3, -c, "from mpi4py import MPI; import os; c = MPI.COMM_WORLD; os._exit(3) if c.Get_rank() == 3 else c.Barrier()"]
    env: {OMPI_ALLOW_RUN_AS_ROOT: "1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: "1"}
  - role: worker
    replicas: 2
    resources: {gpus: 2, cpus: 1, memory: 512Mi}
restart: {max_attempts: 1}
)yaml");
  Job job = cluster.WaitForState(id, JobState::kFailed, std::chrono::seconds(120));
  ASSERT_EQ(job.state, JobState::kFailed) << cluster.EventsText(id);
  const Task* launcher = TaskOf(job, "launcher", 0);
  ASSERT_TRUE(launcher);
  EXPECT_EQ(launcher->exit_code, 3) << "mpirun ends with the failed rank's status";
  for (const auto& t : job.tasks) EXPECT_TRUE(IsTerminal(t.state)) << t.Name();
  EXPECT_THAT(cluster.Logs(id, "launcher/0"), HasSubstr("exited with non-zero status"));
}

TEST(Mpi, OnlyTheJobsOwnTasksStartCommandsInItsWorkers) {
  ASSERT_TRUE(HaveMpi());
  LocalCluster cluster("mpiauth");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  // A launcher that waits: its workers serve meanwhile.
  JobId victim = cluster.Submit(R"yaml(
name: victim
framework: mpi
tasks:
  - {role: launcher, resources: {cpus: 0.25, memory: 128Mi}, command: [sleep, "120"]}
  - {role: worker, resources: {gpus: 1, cpus: 0.25, memory: 128Mi}}
)yaml");
  Job running = cluster.WaitForState(victim, JobState::kRunning, std::chrono::seconds(60));
  const Task* worker = TaskOf(running, "worker", 0);
  ASSERT_TRUE(worker);
  std::string marker = cluster.dir() + "/pwned";
  // Another job, on the same node, that knows where the worker listens and guesses a credential.
  std::string attack = fmt::format(
      "COHORT_JOB_CREDENTIAL=0000000000000000000000000000000000000000000000000000000000000000 "
      "COHORT_EXEC_ENDPOINTS=cohort-job{0}-worker-0={1}:{2} {3}/tools/cohort-exec "
      "cohort-job{0}-worker-0 touch {4}; echo status=$?",
      victim, worker->host, worker->port, BinDir(), marker);
  JobId attacker = cluster.Submit(fmt::format(R"yaml(
name: attacker
tasks:
  - {{role: worker, resources: {{cpus: 0.25, memory: 128Mi}}, command: [sh, -c, "{}"]}}
)yaml",
                                              attack));
  cluster.WaitForState(attacker, JobState::kSucceeded, std::chrono::seconds(60));
  std::string said = cluster.Logs(attacker);
  EXPECT_THAT(said, HasSubstr("status=255"));
  EXPECT_THAT(said, HasSubstr("credential refused"));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a stranger ran a command in the worker";
  EXPECT_THAT(cluster.Logs(victim, "worker/0"), HasSubstr("not this job's credential"));
  ASSERT_EQ(cluster.Cohort({"kill", std::to_string(victim)}).exit_code, 0);
}

TEST(Frameworks, JaxProcessesFindTheirCoordinatorOnAPortTheMasterAssigned) {
  LocalCluster cluster("jaxenv");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  cluster.StartAgent("node-b", 2);
  JobId id = cluster.Submit(R"yaml(
name: jax-env
framework: jax
tasks:
  - role: worker
    replicas: 3
    resources: {gpus: 1, cpus: 0.25, memory: 128Mi}
    command: [sh, -c, 'for v in JAX_COORDINATOR_ADDRESS JAX_PROCESS_COUNT JAX_PROCESS_ID CUDA_VISIBLE_DEVICES; do echo "$v=$(printenv $v)"; done']
)yaml");
  Job job = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(60));
  std::set<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto env = EnvOf(cluster.Logs(id, "worker/" + std::to_string(i)));
    SCOPED_TRACE(i);
    EXPECT_EQ(env["JAX_COORDINATOR_ADDRESS"],
              fmt::format("{}:{}", job.tasks[0].host, job.tasks[0].port));
    EXPECT_EQ(env["JAX_PROCESS_COUNT"], "3");
    EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], JoinGpus(job.tasks[i].gpus));
    ids.insert(env["JAX_PROCESS_ID"]);
  }
  EXPECT_EQ(ids, (std::set<std::string>{"0", "1", "2"}));
}

TEST(Frameworks, DeepSpeedTasksReadTheirHostfileAndTheirLaunchersVariables) {
  LocalCluster cluster("dsenv");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 2);
  cluster.StartAgent("node-b", 2);
  JobId id = cluster.Submit(R"yaml(
name: ds-env
framework: deepspeed
tasks:
  - role: worker
    replicas: 2
    resources: {gpus: 2, cpus: 0.25, memory: 128Mi}
    command: [sh, -c, 'for v in MASTER_ADDR MASTER_PORT WORLD_SIZE RANK LOCAL_RANK NODE_RANK CROSS_SIZE; do echo "$v=$(printenv $v)"; done; sed "s/^/hostfile:/" "$COHORT_DEEPSPEED_HOSTFILE"']
)yaml");
  Job job = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(60));
  for (int i = 0; i < 2; ++i) {
    std::string log = cluster.Logs(id, "worker/" + std::to_string(i));
    auto env = EnvOf(log);
    SCOPED_TRACE(i);
    EXPECT_EQ(env["MASTER_ADDR"], job.tasks[0].host);
    EXPECT_EQ(env["MASTER_PORT"], std::to_string(job.tasks[0].port));
    EXPECT_EQ(env["WORLD_SIZE"], "2");
    EXPECT_EQ(env["RANK"], std::to_string(i));
    EXPECT_EQ(env["NODE_RANK"], std::to_string(i));
    EXPECT_EQ(env["LOCAL_RANK"], "0");
    EXPECT_EQ(env["CROSS_SIZE"], "2");
    EXPECT_THAT(log, HasSubstr("hostfile:worker-0 slots=2\nhostfile:worker-1 slots=2\n"));
  }
}

// torchrun --nnodes=MIN:MAX from the PET_* variables alone: its c10d rendezvous on the first
// task's port, which rank 0 hosts, and a real all_reduce over the world it forms.
TEST(Frameworks, ElasticPyTorchTasksMeetInTorchrunsRendezvousAndAllReduce) {
  ASSERT_EQ(RunCommand({"/usr/bin/python3", "-c", "import torch.distributed.run"}).exit_code, 0)
      << "Debian's python3-torch is needed";
  LocalCluster cluster("torchrun");
  cluster.StartMaster();
  cluster.StartAgent("node-a", 1);
  cluster.StartAgent("node-b", 1);
  std::string script = cluster.dir() + "/allreduce.py";
  std::ofstream(script) << R"py(import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"torchrun world {dist.get_world_size()} rank {dist.get_rank()} sum {t.item():.0f} "
      f"nnodes {os.environ['PET_NNODES']}", flush=True)
dist.destroy_process_group()
)py";
  JobId id = cluster.Submit(fmt::format(R"yaml(
name: torchrun
framework: pytorch
tasks:
  - role: worker
    replicas: {{min: 2, max: 3}}
    resources: {{gpus: 1, cpus: 0.5, memory: 1Gi}}
    command: [/usr/bin/python3, -m, torch.distributed.run, {}]
)yaml",
                                        script));
  Job job = cluster.WaitForState(id, JobState::kSucceeded, std::chrono::seconds(180));
  ASSERT_EQ(job.state, JobState::kSucceeded) << cluster.EventsText(id) << cluster.Logs(id);
  std::string logs = cluster.Logs(id);
  EXPECT_THAT(logs, HasSubstr("torchrun world 2 rank 0 sum 3 nnodes 2:3"));
  EXPECT_THAT(logs, HasSubstr("torchrun world 2 rank 1 sum 3 nnodes 2:3"));
}

}  // namespace
}  // namespace cohort::testing
