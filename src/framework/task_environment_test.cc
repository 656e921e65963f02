#include "framework/task_environment.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "framework/frameworks.h"
#include "model/limits.h"

namespace cohort::framework {
namespace {

// A job of `groups` (role, replicas), placed two tasks per node on hosts 10.0.0.<node>.
Job PlacedJob(Framework framework, std::vector<std::pair<std::string, int>> groups) {
  Job job;
  job.id = 42;
  job.attempt = 2;
  job.spec.name = "demo";
  job.spec.framework = framework;
  int rank = 0;
  for (const auto& [role, replicas] : groups) {
    TaskGroupSpec g;
    g.role = role;
    g.replicas = replicas;
    g.resources.gpus = 1;
    g.env = {{"MY_VAR", role}};
    job.spec.tasks.push_back(g);
    for (int i = 0; i < replicas; ++i, ++rank) {
      Task t;
      t.role = role;
      t.index = i;
      t.rank = rank;
      t.node_id = "node-" + std::to_string(rank / 2);
      t.host = "10.0.0." + std::to_string(rank / 2);
      t.port = 30000 + rank;
      t.gpus = {rank % 2};
      job.tasks.push_back(t);
    }
  }
  return job;
}

const JobDirectories kDirs{"/s/42/checkpoints", "/s/42/outputs", "/s/42/logs"};

TEST(TaskEnvironment, CohortVariablesForEveryTask) {
  Job job = PlacedJob(Framework::kNone, {{"worker", 3}});
  auto env = TaskEnvironment(job, 1, kDirs);
  EXPECT_EQ(env["COHORT_JOB_ID"], "42");
  EXPECT_EQ(env["COHORT_ATTEMPT"], "2");
  EXPECT_EQ(env["COHORT_TASK_ROLE"], "worker");
  EXPECT_EQ(env["COHORT_TASK_INDEX"], "1");
  EXPECT_EQ(env["COHORT_HOSTS"], "10.0.0.0,10.0.0.0,10.0.0.1");
  EXPECT_EQ(env["COHORT_CHECKPOINT_DIR"], "/s/42/checkpoints");
  EXPECT_EQ(env["COHORT_OUTPUT_DIR"], "/s/42/outputs");
  EXPECT_EQ(env["COHORT_LOG_DIR"], "/s/42/logs");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "1");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env["MY_VAR"], "worker");
  EXPECT_EQ(env.count("MASTER_ADDR"), 0u);
  EXPECT_EQ(env.count("TF_CONFIG"), 0u);
}

TEST(TaskEnvironment, AJobOfAnArrayKnowsItsIndex) {
  Job job = PlacedJob(Framework::kNone, {{"worker", 1}});
  EXPECT_EQ(TaskEnvironment(job, 0, kDirs).count("COHORT_ARRAY_INDEX"), 0u);
  job.array = ArrayElement{40, 7, 10, 2};
  auto env = TaskEnvironment(job, 0, kDirs);
  EXPECT_EQ(env["COHORT_ARRAY_ID"], "40");
  EXPECT_EQ(env["COHORT_ARRAY_INDEX"], "7");
  EXPECT_EQ(env["COHORT_ARRAY_COUNT"], "10");
}

TEST(TaskEnvironment, NoGpusHidesAllGpus) {
  Job job = PlacedJob(Framework::kNone, {{"worker", 1}});
  job.tasks[0].gpus.clear();
  EXPECT_EQ(TaskEnvironment(job, 0, kDirs).at("CUDA_VISIBLE_DEVICES"), "");
}

TEST(TaskEnvironment, PyTorchRendezvous) {
  Job job = PlacedJob(Framework::kPyTorch, {{"worker", 3}});
  auto env = TaskEnvironment(job, 2, kDirs);
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.0");
  EXPECT_EQ(env["MASTER_PORT"], "30000");
  EXPECT_EQ(env["WORLD_SIZE"], "3");
  EXPECT_EQ(env["RANK"], "2");
  EXPECT_EQ(env["LOCAL_RANK"], "0");  // first task on node-1
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "1");
  auto env1 = TaskEnvironment(job, 1, kDirs);
  EXPECT_EQ(env1["RANK"], "1");
  EXPECT_EQ(env1["LOCAL_RANK"], "1");
  EXPECT_EQ(env1["LOCAL_WORLD_SIZE"], "2");
}

TEST(TaskEnvironment, TensorFlowConfigListsEveryRole) {
  Job job = PlacedJob(Framework::kTensorFlow, {{"chief", 1}, {"worker", 2}, {"ps", 1}});
  auto env = TaskEnvironment(job, 2, kDirs);  // worker 1
  auto config = nlohmann::json::parse(env["TF_CONFIG"]);
  EXPECT_EQ(config["cluster"]["chief"], nlohmann::json({"10.0.0.0:30000"}));
  EXPECT_EQ(config["cluster"]["worker"], nlohmann::json({"10.0.0.0:30001", "10.0.0.1:30002"}));
  EXPECT_EQ(config["cluster"]["ps"], nlohmann::json({"10.0.0.1:30003"}));
  EXPECT_EQ(config["task"]["type"], "worker");
  EXPECT_EQ(config["task"]["index"], 1);
  EXPECT_EQ(env.count("MASTER_ADDR"), 0u);
}

TEST(TaskEnvironment, ElasticPyTorchJobsGetTorchrunRendezvous) {
  Job job = PlacedJob(Framework::kPyTorch, {{"worker", 3}});
  job.spec.tasks[0].replicas = 2;
  job.spec.tasks[0].max_replicas = 6;
  job.tasks[2].scaled_down = true;  // being taken away: not part of the world any more
  auto env = TaskEnvironment(job, 1, kDirs);
  EXPECT_EQ(env["PET_NNODES"], "2:6");
  EXPECT_EQ(env["PET_RDZV_BACKEND"], "c10d");
  EXPECT_EQ(env["PET_RDZV_ENDPOINT"], "10.0.0.0:30000");
  EXPECT_EQ(env["PET_RDZV_ID"], "cohort-42-2");
  EXPECT_EQ(env["PET_RDZV_CONF"], "is_host=0,last_call_timeout=5");
  EXPECT_EQ(TaskEnvironment(job, 0, kDirs)["PET_RDZV_CONF"], "is_host=1,last_call_timeout=5");
  EXPECT_EQ(env["WORLD_SIZE"], "2");
  EXPECT_EQ(env["COHORT_NUM_TASKS"], "2");
  EXPECT_EQ(env["COHORT_HOSTS"], "10.0.0.0,10.0.0.0");
  EXPECT_EQ(env["COHORT_MIN_REPLICAS"], "2");
  EXPECT_EQ(env["COHORT_MAX_REPLICAS"], "6");
}

TEST(TaskEnvironment, AnMpiLauncherReachesEachWorkerByANameOfItsOwn) {
  Job job = PlacedJob(Framework::kMpi, {{"launcher", 1}, {"worker", 3}});
  job.tasks[2].gpus = {0, 1};  // worker 1: two GPUs, two slots
  job.tasks[3].gpus.clear();   // worker 2: none, its whole CPUs
  job.tasks[3].resources.milli_cpus = 2500;
  auto launcher = TaskEnvironment(job, 0, kDirs);
  EXPECT_EQ(launcher["OMPI_MCA_plm_rsh_agent"], "cohort-exec");
  EXPECT_EQ(launcher["OMPI_MCA_plm_rsh_no_tree_spawn"], "1");
  EXPECT_EQ(launcher["OMPI_MCA_orte_leave_session_attached"], "1");
  EXPECT_EQ(launcher["COHORT_MPI_SLOTS"], "5");
  EXPECT_EQ(launcher["COHORT_EXEC_ENDPOINTS"],
            "cohort-job42-worker-0=10.0.0.0:30001,cohort-job42-worker-1=10.0.0.1:30002,"
            "cohort-job42-worker-2=10.0.0.1:30003");
  auto files = TaskFiles(job, 0);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].content,
            "cohort-job42-worker-0 slots=1\ncohort-job42-worker-1 slots=2\ncohort-job42-worker-2 "
            "slots=2\n");
  EXPECT_EQ(files[0].env,
            (std::vector<std::string>{"COHORT_MPI_HOSTFILE", "OMPI_MCA_orte_default_hostfile"}));
  EXPECT_TRUE(TaskToolsOf(job, 0).tools);
  EXPECT_FALSE(TaskToolsOf(job, 0).exec_service);

  // Workers serve; mpirun's settings are the launcher's alone (mpirun passes its own on).
  auto worker = TaskEnvironment(job, 2, kDirs);
  EXPECT_EQ(worker.count("OMPI_MCA_plm_rsh_agent"), 0u);
  EXPECT_EQ(worker["COHORT_MPI_SLOTS"], "5");
  EXPECT_EQ(TaskFiles(job, 2).at(0).env, (std::vector<std::string>{"COHORT_MPI_HOSTFILE"}));
  EXPECT_TRUE(TaskToolsOf(job, 2).exec_service);
  EXPECT_TRUE(UsesJobCredential(job.spec));
  EXPECT_FALSE(UsesJobCredential(PlacedJob(Framework::kPyTorch, {{"worker", 2}}).spec));
  EXPECT_FALSE(TaskToolsOf(PlacedJob(Framework::kPyTorch, {{"worker", 2}}), 0).tools);
}

TEST(TaskEnvironment, ASessionsTaskIsTheTerminalServerAndHoldsTheJobsCredential) {
  Job job = PlacedJob(Framework::kNone, {{"shell", 1}});
  job.spec.session = SessionSpec{};
  job.spec.tasks[0].command.clear();
  const TaskTools tools = TaskToolsOf(job, 0);
  EXPECT_TRUE(tools.terminal);
  EXPECT_FALSE(tools.tools || tools.exec_service || tools.slurm_tools);
  EXPECT_TRUE(TaskCommand(job, 0).empty()) << "the agent's terminal server is its command";
  EXPECT_TRUE(UsesJobCredential(job.spec));
  EXPECT_FALSE(TaskToolsOf(PlacedJob(Framework::kNone, {{"main", 1}}), 0).terminal);
}

TEST(TaskEnvironment, ANotebookSessionRunsJupyterOnItsPortUnderTheMastersPath) {
  Job job = PlacedJob(Framework::kNone, {{"notebook", 1}});
  job.spec.session = SessionSpec{SessionKind::kNotebook, std::nullopt};
  job.spec.tasks[0].command.clear();
  const std::vector<std::string> command = TaskCommand(job, 0);
  ASSERT_FALSE(command.empty());
  EXPECT_EQ(command[0], "jupyter-notebook");
  EXPECT_THAT(command, ::testing::Contains(fmt::format("--port={}", job.tasks[0].port)));
  EXPECT_THAT(command, ::testing::Contains("--NotebookApp.base_url=/api/v1/jobs/42/notebook/"));
  EXPECT_FALSE(TaskToolsOf(job, 0).terminal) << "no terminal server: Jupyter is the task";
  EXPECT_TRUE(UsesJobCredential(job.spec));
}

TEST(TaskEnvironment, JaxProcessesMeetAtTheFirstTasksPort) {
  Job job = PlacedJob(Framework::kJax, {{"worker", 3}});
  auto env = TaskEnvironment(job, 2, kDirs);
  EXPECT_EQ(env["JAX_COORDINATOR_ADDRESS"], "10.0.0.0:30000");
  EXPECT_EQ(env["JAX_PROCESS_COUNT"], "3");
  EXPECT_EQ(env["JAX_PROCESS_ID"], "2");
  EXPECT_TRUE(TaskFiles(job, 2).empty());
}

TEST(TaskEnvironment, DeepSpeedGetsItsHostfileAndItsLaunchersVariables) {
  Job job = PlacedJob(Framework::kDeepSpeed, {{"worker", 3}});
  job.tasks[2].gpus = {0, 1};
  auto env = TaskEnvironment(job, 2, kDirs);  // the only task on node-1
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.0");
  EXPECT_EQ(env["MASTER_PORT"], "30000");
  EXPECT_EQ(env["WORLD_SIZE"], "3");
  EXPECT_EQ(env["RANK"], "2");
  EXPECT_EQ(env["LOCAL_RANK"], "0");
  EXPECT_EQ(env["LOCAL_SIZE"], "1");
  EXPECT_EQ(env["CROSS_RANK"], "1");
  EXPECT_EQ(env["CROSS_SIZE"], "2");
  EXPECT_EQ(env["NODE_RANK"], "2");
  EXPECT_EQ(TaskEnvironment(job, 1, kDirs)["LOCAL_RANK"], "1");
  auto files = TaskFiles(job, 0);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].content, "worker-0 slots=1\nworker-1 slots=1\nworker-2 slots=2\n");
  EXPECT_EQ(files[0].env, (std::vector<std::string>{"COHORT_DEEPSPEED_HOSTFILE"}));
}

// A Slurm job of `nodes` node tasks, one per host (10.0.0.<rank>), 2 GPUs and 8 CPUs each.
Job SlurmJob(int nodes) {
  Job job = PlacedJob(Framework::kSlurm, {{"node", nodes}});
  for (auto& t : job.tasks) {
    t.node_id = "node-" + std::to_string(t.rank);
    t.host = "10.0.0." + std::to_string(t.rank);
    t.gpus = {2, 3};
    t.resources.milli_cpus = 8000;
  }
  job.user = "ada";
  job.spec.name = "train";
  job.spec.tasks[0].workdir = "/home/ada/proj";
  job.spec.max_runtime = std::chrono::minutes(10);
  SlurmSection s;
  s.script = "#!/bin/bash\nsrun hostname\n";
  s.args = {"--epochs", "3"};
  s.job_name = "my train";
  s.tasks_per_node = std::vector<int>(static_cast<size_t>(nodes), 2);
  s.tasks_asked = true;
  s.ntasks_per_node = 2;
  s.gpus_per_task = "1";
  s.submit_dir = "/home/ada/proj";
  s.submit_host = "login1";
  s.partition = "research";
  s.output = "logs/%x-%j.out";
  s.error = "/tmp/%j.err";
  s.signal = SlurmSignal{.number = 10, .before_end = std::chrono::seconds(120)};
  job.spec.slurm = s;
  return job;
}

TEST(TaskEnvironment, ASlurmJobsNodesGetTheBatchScriptsVariablesAndTheFirstRunsIt) {
  Job job = SlurmJob(3);
  auto first = TaskEnvironment(job, 0, kDirs);
  EXPECT_EQ(first["SLURM_JOB_ID"], "42");
  EXPECT_EQ(first["SLURM_JOB_NAME"], "my train");
  EXPECT_EQ(first["SLURM_JOB_NODELIST"], "10.0.0.[0-2]");
  EXPECT_EQ(first["SLURM_JOB_NUM_NODES"], "3");
  EXPECT_EQ(first["SLURM_TASKS_PER_NODE"], "2(x3)");
  EXPECT_EQ(first["SLURM_NTASKS"], "6");
  EXPECT_EQ(first["SLURM_JOB_CPUS_PER_NODE"], "8(x3)");
  EXPECT_EQ(first["SLURM_GPUS_ON_NODE"], "2");
  EXPECT_EQ(first["SLURM_SUBMIT_DIR"], "/home/ada/proj");
  EXPECT_EQ(first["SLURM_SUBMIT_HOST"], "login1");
  EXPECT_EQ(first["SLURM_JOB_PARTITION"], "research");
  EXPECT_EQ(first["SLURMD_NODENAME"], "10.0.0.0");
  EXPECT_EQ(first["CUDA_VISIBLE_DEVICES"], "2,3");
  EXPECT_EQ(first["COHORT_EXEC_ENDPOINTS"],
            "10.0.0.0=10.0.0.0:30000,10.0.0.1=10.0.0.1:30001,10.0.0.2=10.0.0.2:30002");
  // What `cohort-exec batch` reads: the files by Slurm's patterns, relative to the workdir.
  EXPECT_EQ(first["COHORT_SLURM_OUTPUT"], "/home/ada/proj/logs/my train-42.out");
  EXPECT_EQ(first["COHORT_SLURM_ERROR"], "/tmp/42.err");
  EXPECT_EQ(first.count("COHORT_SLURM_INPUT"), 0u);
  EXPECT_EQ(first["COHORT_SLURM_OPEN_MODE"], "truncate");
  EXPECT_EQ(first["COHORT_SLURM_SIGNAL"], "10@480");  // 10 min less 120 s
  auto files = TaskFiles(job, 0);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].content, "#!/bin/bash\nsrun hostname\n");
  EXPECT_EQ(files[0].env, (std::vector<std::string>{"COHORT_SLURM_SCRIPT"}));
  EXPECT_EQ(TaskCommand(job, 0),
            (std::vector<std::string>{"cohort-exec", "batch", "--", "--epochs", "3"}));
  TaskTools tools = TaskToolsOf(job, 0);
  EXPECT_TRUE(tools.tools && tools.slurm_tools && tools.exec_service);
  EXPECT_TRUE(UsesJobCredential(job.spec));
  EXPECT_EQ(SuccessEndsJob(job, job.tasks[0]),
            "the batch script succeeded; stopping the job's other nodes");

  // The others serve srun with the job's variables as their node sees them, and run nothing.
  auto third = TaskEnvironment(job, 2, kDirs);
  EXPECT_EQ(third["SLURMD_NODENAME"], "10.0.0.2");
  EXPECT_EQ(third["SLURM_NODEID"], "2");
  EXPECT_EQ(third["SLURM_JOB_NODELIST"], "10.0.0.[0-2]");
  EXPECT_EQ(third.count("COHORT_SLURM_OUTPUT"), 0u);
  EXPECT_TRUE(TaskFiles(job, 2).empty());
  EXPECT_TRUE(TaskCommand(job, 2).empty());
  EXPECT_TRUE(TaskToolsOf(job, 2).exec_service);
  EXPECT_EQ(SuccessEndsJob(job, job.tasks[2]), std::nullopt);
  // Other frameworks: the group's command.
  Job mpi = PlacedJob(Framework::kMpi, {{"launcher", 1}, {"worker", 1}});
  mpi.spec.tasks[0].command = {"mpirun", "prog"};
  EXPECT_EQ(TaskCommand(mpi, 0), (std::vector<std::string>{"mpirun", "prog"}));
  EXPECT_EQ(SuccessEndsJob(mpi, mpi.tasks[0]), "the launcher succeeded; stopping the workers");
  EXPECT_EQ(SuccessEndsJob(mpi, mpi.tasks[1]), std::nullopt);
}

TEST(TaskEnvironment, SlurmNodesThatShareAnAddressAreNamedByTheirNodes) {
  Job job = SlurmJob(2);
  job.tasks[1].host = job.tasks[0].host;  // two agents on one machine
  EXPECT_EQ(SlurmNodeNames(job), (std::vector<std::string>{"node-0", "node-1"}));
  auto env = TaskEnvironment(job, 0, kDirs);
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "node-[0-1]");
  EXPECT_EQ(env["COHORT_EXEC_ENDPOINTS"], "node-0=10.0.0.0:30000,node-1=10.0.0.0:30001");
}

TEST(TaskEnvironment, ASlurmArrayJobKnowsItsArrayAndAppendsWhenAsked) {
  Job job = SlurmJob(1);
  job.spec.array = ArraySpec{.indices = {0, 2, 4}};
  job.array = ArrayElement{.id = 40, .index = 2, .count = 3};
  job.spec.slurm->array_step = 2;
  job.spec.slurm->output = "out-%A_%a.txt";
  job.spec.slurm->append = true;
  job.spec.slurm->signal->batch_only = true;
  job.spec.max_runtime = std::chrono::seconds(60);  // shorter than the warning: at once
  auto env = TaskEnvironment(job, 0, kDirs);
  EXPECT_EQ(env["SLURM_ARRAY_JOB_ID"], "40");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_ID"], "2");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_COUNT"], "3");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_MAX"], "4");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_STEP"], "2");
  EXPECT_EQ(env["COHORT_SLURM_OUTPUT"], "/home/ada/proj/out-40_2.txt");
  EXPECT_EQ(env["COHORT_SLURM_OPEN_MODE"], "append");
  EXPECT_EQ(env["COHORT_SLURM_SIGNAL"], "B:10@0");
  job.spec.max_runtime.reset();  // no time limit: no warning either, as in Slurm
  EXPECT_EQ(TaskEnvironment(job, 0, kDirs).count("COHORT_SLURM_SIGNAL"), 0u);
}

// What bounds a node's desired state counts Cohort's variables by EnvironmentBytesBound: it must
// never be below what TaskEnvironment adds, with every field at its longest, and stay close.
TEST(TaskEnvironment, TheBoundOfWhatItAddsHoldsForTheLongestFields) {
  for (Framework framework :
       {Framework::kNone, Framework::kPyTorch, Framework::kTensorFlow, Framework::kMpi,
        Framework::kJax, Framework::kDeepSpeed, Framework::kSlurm}) {
    Job job = framework == Framework::kMpi
                  ? PlacedJob(framework, {{"worker", 1000}, {"launcher", 1}})
                  : PlacedJob(framework, {{std::string(32, 'w'), 1000}, {"ps", 24}});
    if (framework == Framework::kSlurm) {
      // The longest of each field a section may hold, with every variable set.
      job = SlurmJob(1024);
      SlurmSection& s = *job.spec.slurm;
      s.script = "#!" + std::string(kMaxSlurmJobScriptBytes - 2, 's');
      s.job_name = std::string(kMaxSlurmTextLength, 'j');
      s.submit_dir = "/" + std::string(kMaxWorkdirLength - 1, 'd');
      s.submit_host = std::string(kMaxAddressLength, 'h');
      s.output = std::string(kMaxWorkdirLength - 2, 'o') + "%x";
      s.error = std::string(kMaxWorkdirLength - 2, 'e') + "%x";
      s.input = std::string(kMaxWorkdirLength - 2, 'i') + "%u";
      s.gpus = s.gpus_per_node = s.gpus_per_task = std::string(kMaxSlurmTextLength, 'g');
      s.partition = s.account = s.qos = std::string(kMaxSlurmTextLength, 'p');
      s.cpus_per_task = s.cpus_per_gpu = s.ntasks_per_node = 1 << 20;
      s.mem_per_node = s.mem_per_cpu = s.mem_per_gpu = kMaxTaskMemoryBytes;
      s.tasks_per_node.assign(1024, 65536);
      job.user = std::string(64, 'u');
      job.spec.array = ArraySpec{.indices = {0, kMaxArrayIndex}};
    }
    job.id = 9'000'000'000'000'000'000;
    job.attempt = 2'000'000'000;
    job.spec.name = std::string(128, 'n');
    job.array = ArrayElement{9'000'000'000'000'000'000, kMaxArrayIndex, kMaxArrayJobs, 1000};
    if (framework == Framework::kPyTorch) job.spec.tasks[0].max_replicas = 1024;
    for (auto& t : job.tasks) {
      t.host = std::string(253, 'h');
      t.node_id = std::string(64, 'i');
      t.port = 65535;
      t.gpus.clear();
      for (int g = 0; g < 64; ++g) t.gpus.push_back(g);
    }
    if (framework == Framework::kSlurm) {
      // Addresses that differ in letters: a node list that no hostlist compresses.
      for (auto& t : job.tasks) {
        for (int i = 0, n = t.rank; i < 3; ++i, n /= 26) t.host[252 - i] = char('a' + n % 26);
      }
    }
    const JobDirectories dirs{std::string(4096, 'c'), std::string(4096, 'o'),
                              std::string(4096, 'l')};
    int64_t bound = EnvironmentBytesBound(job.spec, job.tasks, dirs);
    for (size_t i : {size_t{0}, size_t{999}, job.tasks.size() - 1}) {
      int64_t added = 0;
      for (const auto& [name, value] : TaskEnvironment(job, i, dirs)) {
        added += static_cast<int64_t>(name.size() + value.size());
      }
      const size_t group = framework == Framework::kSlurm ? 0 : (i < 1000 ? 0 : 1);
      for (const auto& [name, value] : job.spec.tasks[group].env) {
        added -= static_cast<int64_t>(name.size() + value.size());
      }
      for (const auto& file : TaskFiles(job, i)) {
        added += static_cast<int64_t>(file.name.size() + file.content.size());
        // The agent sets each to the file's path: that value is not in what the master sends.
        for (const auto& name : file.env) added += static_cast<int64_t>(name.size());
      }
      EXPECT_GE(bound, added) << FrameworkName(framework) << " task " << i;
      // Close: a few KiB, and a few bytes a task where each task has a line of a hostfile. (The
      // bound is what the most any one task adds: in a Slurm job, its first, with the script.)
      if (framework == Framework::kSlurm && i != 0) continue;
      EXPECT_LE(bound, added + 4 * 1024 + 32 * static_cast<int64_t>(job.tasks.size()))
          << FrameworkName(framework) << " task " << i;
    }
  }
}

}  // namespace
}  // namespace cohort::framework
