// What the libraries that detect Slurm read of the environment, fed the variables
// StepTaskEnvironment gives each task of a step, must make one consistent world. Each library's
// reading is replayed here as its source does it:
//
// - PyTorch Lightning, SLURMEnvironment (Lightning-AI/pytorch-lightning,
//   src/lightning/fabric/plugins/environments/slurm.py, read at 03f57f9): detect() is
//   SLURM_NTASKS present and SLURM_JOB_NAME neither "bash" nor "interactive"; world_size
//   SLURM_NTASKS, global_rank SLURM_PROCID, local_rank SLURM_LOCALID, node_rank SLURM_NODEID;
//   main_address the first host of SLURM_NODELIST by two regular expressions; main_port 15000
//   plus the last four digits of SLURM_JOB_ID; and it refuses SLURM_NTASKS > 1 without
//   SLURM_NTASKS_PER_NODE.
// - JAX, SlurmCluster (jax-ml/jax, jax/_src/clusters/slurm_cluster.py, read at 01f4709):
//   present when SLURM_JOB_ID is; the coordinator is the first host of SLURM_STEP_NODELIST, cut
//   at the first ',' or '[' and then at ',' or '-' inside the bracket, on port SLURM_JOB_ID mod
//   4096 + 61440; process count SLURM_NTASKS, process id SLURM_PROCID, local process id
//   SLURM_LOCALID.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "slurm/slurm_environment.h"

namespace cohort::slurm {
namespace {

using Environment = std::map<std::string, std::string>;

// A job on `nodes`, `per_node` tasks each (--ntasks-per-node, as Lightning's docs ask), and the
// environments of its one step's tasks over all of them, ranks in node order.
std::vector<Environment> StepTasks(const std::vector<std::string>& nodes, int per_node,
                                   const std::string& job_name = "train") {
  SlurmJobInfo job;
  job.job_id = 1234567;
  job.job_name = job_name;
  job.nodes = nodes;
  job.tasks_per_node.assign(nodes.size(), per_node);
  job.cpus_per_node.assign(nodes.size(), 8 * per_node);
  job.tasks_asked = true;
  job.ntasks_per_node = per_node;
  std::vector<Environment> envs;
  for (int node = 0; node < static_cast<int>(nodes.size()); ++node) {
    for (int local = 0; local < per_node; ++local) {
      SlurmStepTask task;
      task.nodes = nodes;
      task.tasks_per_node = job.tasks_per_node;
      task.node_index = node;
      task.procid = node * per_node + local;
      task.localid = local;
      task.gpus_on_node = 1;
      task.cuda_visible_devices = std::to_string(local);
      envs.push_back(StepTaskEnvironment(job, task));
    }
  }
  return envs;
}

int Int(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  EXPECT_NE(it, env.end()) << name << " is not set";
  return it == env.end() ? -1 : std::stoi(it->second);
}

// Lightning's SLURMEnvironment, as slurm.py reads the environment.
struct LightningView {
  bool detected;
  int world_size, global_rank, local_rank, node_rank, main_port;
  std::string main_address;
};

std::string LightningRootNode(std::string nodes) {
  nodes = std::regex_replace(nodes, std::regex(R"(\[(.*?)[,-].*\])"), "$1");
  nodes = std::regex_replace(nodes, std::regex(R"(\[(.*?)\])"), "$1");
  nodes = nodes.substr(0, nodes.find(' '));
  return nodes.substr(0, nodes.find(','));
}

LightningView Lightning(const Environment& env) {
  LightningView view{};
  const std::string job_name = env.count("SLURM_JOB_NAME") ? env.at("SLURM_JOB_NAME") : "";
  view.detected = env.count("SLURM_NTASKS") && job_name != "bash" && job_name != "interactive";
  if (!view.detected) return view;
  // _validate_srun_variables: more than one task needs SLURM_NTASKS_PER_NODE.
  EXPECT_TRUE(Int(env, "SLURM_NTASKS") <= 1 || env.count("SLURM_NTASKS_PER_NODE"));
  view.world_size = Int(env, "SLURM_NTASKS");
  view.global_rank = Int(env, "SLURM_PROCID");
  view.local_rank = Int(env, "SLURM_LOCALID");
  view.node_rank = Int(env, "SLURM_NODEID");
  view.main_address =
      LightningRootNode(env.count("SLURM_NODELIST") ? env.at("SLURM_NODELIST") : "127.0.0.1");
  const std::string id = env.at("SLURM_JOB_ID");
  view.main_port = std::stoi(id.substr(id.size() > 4 ? id.size() - 4 : 0)) + 15000;
  return view;
}

// JAX's SlurmCluster, as slurm_cluster.py reads the environment.
struct JaxView {
  bool present;
  std::string coordinator;
  int process_count, process_id, local_process_id;
};

JaxView Jax(const Environment& env) {
  JaxView view{};
  view.present = env.count("SLURM_JOB_ID");
  if (!view.present) return view;
  const int port = std::stoi(env.at("SLURM_JOB_ID")) % 4096 + (65535 - 4096 + 1);
  const std::string list = env.at("SLURM_STEP_NODELIST");
  const size_t cut = list.find_first_of(",[");
  std::string host;
  if (cut == std::string::npos || list[cut] == ',') {
    host = list.substr(0, cut);
  } else {
    const std::string inside = list.substr(cut + 1);
    host = list.substr(0, cut) + inside.substr(0, inside.find_first_of(",-"));
  }
  view.coordinator = host + ":" + std::to_string(port);
  view.process_count = Int(env, "SLURM_NTASKS");
  view.process_id = Int(env, "SLURM_PROCID");
  view.local_process_id = Int(env, "SLURM_LOCALID");
  return view;
}

TEST(Lightning, SeesOneWorldFromEveryTask) {
  for (const auto& nodes : std::vector<std::vector<std::string>>{
           {"gpu01", "gpu02", "gpu03"}, {"node-a", "node-b"}, {"dgx7"}, {"n9", "n10", "x1"}}) {
    const std::vector<Environment> envs = StepTasks(nodes, 4);
    std::set<int> ranks;
    for (const Environment& env : envs) {
      const LightningView view = Lightning(env);
      ASSERT_TRUE(view.detected);
      EXPECT_EQ(view.world_size, static_cast<int>(envs.size()));
      EXPECT_EQ(view.global_rank, view.node_rank * 4 + view.local_rank);
      EXPECT_LT(view.local_rank, 4);
      EXPECT_EQ(env.at("SLURMD_NODENAME"), nodes[view.node_rank]);
      EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), std::to_string(view.local_rank));
      EXPECT_EQ(view.main_address, nodes[0]) << env.at("SLURM_NODELIST");
      EXPECT_EQ(view.main_port, 4567 + 15000);
      ranks.insert(view.global_rank);
    }
    EXPECT_EQ(ranks.size(), envs.size());
    EXPECT_EQ(*ranks.rbegin(), static_cast<int>(envs.size()) - 1);
  }
}

TEST(Lightning, TakesAJobNamedInteractiveForAnInteractiveSession) {
  // Lightning's documented way out of its Slurm detection: the job's name is kept as given.
  EXPECT_FALSE(Lightning(StepTasks({"gpu01"}, 2, "interactive")[0]).detected);
  EXPECT_FALSE(Lightning(StepTasks({"gpu01"}, 2, "bash")[0]).detected);
}

TEST(Jax, SeesOneWorldFromEveryTask) {
  for (const auto& nodes : std::vector<std::vector<std::string>>{
           {"gpu001", "gpu002", "gpu007"}, {"a", "b"}, {"node12"}}) {
    const std::vector<Environment> envs = StepTasks(nodes, 2);
    std::set<int> ids;
    for (const Environment& env : envs) {
      const JaxView view = Jax(env);
      ASSERT_TRUE(view.present);
      EXPECT_EQ(view.coordinator, nodes[0] + ":" + std::to_string(1234567 % 4096 + 61440))
          << env.at("SLURM_STEP_NODELIST");
      EXPECT_EQ(view.process_count, static_cast<int>(envs.size()));
      EXPECT_EQ(view.local_process_id, view.process_id % 2);
      ids.insert(view.process_id);
    }
    EXPECT_EQ(ids.size(), envs.size());
  }
}

TEST(Jax, TheCoordinatorIsTheStepsFirstNodeNotTheJobs) {
  SlurmJobInfo job;
  job.job_id = 77;
  job.nodes = {"gpu01", "gpu02", "gpu03"};
  job.tasks_per_node = {1, 1, 1};
  job.cpus_per_node = {8, 8, 8};
  SlurmStepTask task;
  task.nodes = {"gpu02", "gpu03"};
  task.tasks_per_node = {1, 1};
  task.node_index = 1;
  task.procid = 1;
  const JaxView view = Jax(StepTaskEnvironment(job, task));
  EXPECT_EQ(view.coordinator, "gpu02:" + std::to_string(77 + 61440));
  EXPECT_EQ(view.process_count, 2);
  EXPECT_EQ(view.process_id, 1);
  EXPECT_EQ(view.local_process_id, 0);
}

}  // namespace
}  // namespace cohort::slurm
