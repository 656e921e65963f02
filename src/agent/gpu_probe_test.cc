#include "agent/gpu_probe.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/nvml_gpu_probe.h"

#ifndef FAKE_NVML_PATH
#error "FAKE_NVML_PATH must name the fake libnvidia-ml.so.1 built from tests/fake_nvml"
#endif

namespace cohort::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr int64_t kMiB = 1024 * 1024;

std::optional<GpuLink> FindLink(const GpuInventory& inventory, int a, int b) {
  for (const GpuLink& link : inventory.links) {
    if (link.a == a && link.b == b) return link;
  }
  return std::nullopt;
}

// The fake reads its machine from the environment at nvmlInit_v2; every test starts from the
// defaults and sets what it needs before probing.
class NvmlGpuProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"FAKE_NVML_GPUS", "FAKE_NVML_MODEL", "FAKE_NVML_MEMORY_MIB", "FAKE_NVML_FAIL_INIT"}) {
      unsetenv(name);
    }
  }

  static StatusOr<GpuInventory> ProbeFake() { return NvmlGpuProbe(FAKE_NVML_PATH).Probe(); }
};

TEST_F(NvmlGpuProbeTest, ReadsEveryGpuOfTheFakeDriver) {
  setenv("FAKE_NVML_GPUS", "4", 1);
  StatusOr<GpuInventory> inventory = ProbeFake();
  ASSERT_TRUE(inventory.ok()) << inventory.status().ToString();

  EXPECT_EQ(inventory->source, "nvml");
  ASSERT_EQ(inventory->gpus.size(), 4u);
  std::set<std::string> uuids;
  for (int i = 0; i < 4; ++i) {
    const Gpu& gpu = inventory->gpus[i];
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.model, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(gpu.memory_bytes, 81559 * kMiB);
    EXPECT_EQ(gpu.uuid, "GPU-fake0000-0000-0000-0000-00000000000" + std::to_string(i));
    EXPECT_EQ(gpu.pci_bus_id, "00000000:1" + std::to_string(i) + ":00.0");
    uuids.insert(gpu.uuid);
  }
  EXPECT_EQ(uuids.size(), 4u);
  EXPECT_EQ(inventory->gpus[0].numa_node, 0);
  EXPECT_EQ(inventory->gpus[1].numa_node, 0);
  EXPECT_EQ(inventory->gpus[2].numa_node, 1);
  EXPECT_EQ(inventory->gpus[3].numa_node, 1);
}

TEST_F(NvmlGpuProbeTest, NvLinkPairsWinAndOtherPairsFollowTheCommonAncestor) {
  setenv("FAKE_NVML_GPUS", "4", 1);
  StatusOr<GpuInventory> inventory = ProbeFake();
  ASSERT_TRUE(inventory.ok()) << inventory.status().ToString();

  // One entry per unordered pair.
  EXPECT_EQ(inventory->links.size(), 6u);
  for (const auto& [a, b] : {std::pair{0, 1}, std::pair{2, 3}}) {
    std::optional<GpuLink> link = FindLink(*inventory, a, b);
    ASSERT_TRUE(link.has_value()) << a << "-" << b;
    EXPECT_EQ(link->type, GpuLinkType::kNvLink) << a << "-" << b;
    EXPECT_EQ(link->nvlinks, 2) << a << "-" << b;
  }
  // With 4 GPUs, halves are {0,1} and {2,3}: every pair without NVLink crosses them.
  for (const auto& [a, b] : {std::pair{0, 2}, std::pair{0, 3}, std::pair{1, 2}, std::pair{1, 3}}) {
    std::optional<GpuLink> link = FindLink(*inventory, a, b);
    ASSERT_TRUE(link.has_value()) << a << "-" << b;
    EXPECT_EQ(link->type, GpuLinkType::kSystem) << a << "-" << b;
    EXPECT_EQ(link->nvlinks, 0) << a << "-" << b;
  }
}

TEST_F(NvmlGpuProbeTest, PairsUnderOnePcieSwitchWithoutNvLink) {
  setenv("FAKE_NVML_GPUS", "8", 1);
  StatusOr<GpuInventory> inventory = ProbeFake();
  ASSERT_TRUE(inventory.ok()) << inventory.status().ToString();

  ASSERT_EQ(inventory->gpus.size(), 8u);
  EXPECT_EQ(inventory->links.size(), 28u);
  EXPECT_EQ(FindLink(*inventory, 0, 1)->type, GpuLinkType::kNvLink);
  EXPECT_EQ(FindLink(*inventory, 6, 7)->type, GpuLinkType::kNvLink);
  EXPECT_EQ(FindLink(*inventory, 0, 2)->type, GpuLinkType::kPcieSwitch);
  EXPECT_EQ(FindLink(*inventory, 4, 7)->type, GpuLinkType::kPcieSwitch);
  EXPECT_EQ(FindLink(*inventory, 3, 4)->type, GpuLinkType::kSystem);
  EXPECT_EQ(FindLink(*inventory, 0, 7)->type, GpuLinkType::kSystem);
  EXPECT_EQ(inventory->gpus[3].numa_node, 0);
  EXPECT_EQ(inventory->gpus[4].numa_node, 1);
}

TEST_F(NvmlGpuProbeTest, FollowsTheConfiguredModelAndMemory) {
  setenv("FAKE_NVML_GPUS", "1", 1);
  setenv("FAKE_NVML_MODEL", "NVIDIA A100-SXM4-40GB", 1);
  setenv("FAKE_NVML_MEMORY_MIB", "40960", 1);
  StatusOr<GpuInventory> inventory = ProbeFake();
  ASSERT_TRUE(inventory.ok()) << inventory.status().ToString();

  ASSERT_EQ(inventory->gpus.size(), 1u);
  EXPECT_EQ(inventory->gpus[0].model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(inventory->gpus[0].memory_bytes, 40960 * kMiB);
  EXPECT_TRUE(inventory->links.empty());
}

TEST_F(NvmlGpuProbeTest, MachineWithoutGpusIsNotAnError) {
  setenv("FAKE_NVML_GPUS", "0", 1);
  StatusOr<GpuInventory> inventory = ProbeFake();
  ASSERT_TRUE(inventory.ok()) << inventory.status().ToString();
  EXPECT_TRUE(inventory->gpus.empty());
  EXPECT_TRUE(inventory->links.empty());
}

TEST_F(NvmlGpuProbeTest, FailingInitIsUnavailableWithNvmlsReason) {
  setenv("FAKE_NVML_FAIL_INIT", "1", 1);
  StatusOr<GpuInventory> inventory = ProbeFake();
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(inventory.status().message(), HasSubstr("nvmlInit_v2"));
  EXPECT_THAT(inventory.status().message(), HasSubstr("Driver Not Loaded"));
}

TEST_F(NvmlGpuProbeTest, FailingCallIsUnavailableWithFunctionName) {
  // Longer than the buffer the probe passes, so nvmlDeviceGetName reports Insufficient Size.
  setenv("FAKE_NVML_MODEL", std::string(200, 'x').c_str(), 1);
  StatusOr<GpuInventory> inventory = ProbeFake();
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(inventory.status().message(), HasSubstr("nvmlDeviceGetName"));
  EXPECT_THAT(inventory.status().message(), HasSubstr("Insufficient Size"));
}

// The test holds the fake open itself, so the probe's dlclose does not unload it and the fake's
// reference count of nvmlInit_v2 calls can be read afterwards through nvmlShutdown.
TEST_F(NvmlGpuProbeTest, ShutsNvmlDownAfterSuccessAndAfterFailure) {
  void* fake = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  using ShutdownFunction = int (*)();
  auto shutdown = reinterpret_cast<ShutdownFunction>(dlsym(fake, "nvmlShutdown"));
  ASSERT_NE(shutdown, nullptr);
  constexpr int kUninitialized = 1;  // NVML_ERROR_UNINITIALIZED

  setenv("FAKE_NVML_GPUS", "2", 1);
  ASSERT_TRUE(ProbeFake().ok());
  EXPECT_EQ(shutdown(), kUninitialized) << "the probe left NVML initialised";

  setenv("FAKE_NVML_MODEL", std::string(200, 'x').c_str(), 1);
  ASSERT_FALSE(ProbeFake().ok());
  EXPECT_EQ(shutdown(), kUninitialized) << "the failing probe left NVML initialised";

  dlclose(fake);
}

TEST_F(NvmlGpuProbeTest, MissingLibraryIsUnavailable) {
  const std::string path = "/nonexistent/libnvidia-ml.so.1";
  StatusOr<GpuInventory> inventory = NvmlGpuProbe(path).Probe();
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(inventory.status().message(), HasSubstr(path));
  EXPECT_FALSE(NvmlGpuProbe::LibraryLoadable(path));
}

TEST_F(NvmlGpuProbeTest, LibraryThatIsNotNvmlIsUnavailable) {
  // Every glibc system has libm; it loads, but has none of NVML's symbols.
  StatusOr<GpuInventory> inventory = NvmlGpuProbe("libm.so.6").Probe();
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(inventory.status().message(), HasSubstr("nvmlInit_v2"));
  EXPECT_FALSE(NvmlGpuProbe::LibraryLoadable("libm.so.6"));
}

TEST_F(NvmlGpuProbeTest, FakeLibraryIsLoadable) {
  EXPECT_TRUE(NvmlGpuProbe::LibraryLoadable(FAKE_NVML_PATH));
}

TEST(DeclaredGpuProbe, DeclaresCountGpusOnOneHostBridge) {
  StatusOr<GpuInventory> inventory =
      DeclaredGpuProbe("node-a", 3, "NVIDIA L4", 23034 * kMiB).Probe();
  ASSERT_TRUE(inventory.ok()) << inventory.status().ToString();

  EXPECT_EQ(inventory->source, "declared");
  ASSERT_EQ(inventory->gpus.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const Gpu& gpu = inventory->gpus[i];
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.model, "NVIDIA L4");
    EXPECT_EQ(gpu.memory_bytes, 23034 * kMiB);
    EXPECT_EQ(gpu.numa_node, 0);
    EXPECT_THAT(gpu.uuid,
                MatchesRegex("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"));
  }
  EXPECT_EQ(inventory->gpus[0].pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(inventory->gpus[2].pci_bus_id, "00000000:03:00.0");

  ASSERT_EQ(inventory->links.size(), 3u);
  for (const auto& [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}}) {
    std::optional<GpuLink> link = FindLink(*inventory, a, b);
    ASSERT_TRUE(link.has_value()) << a << "-" << b;
    EXPECT_EQ(link->type, GpuLinkType::kPcieHostBridge);
    EXPECT_EQ(link->nvlinks, 0);
  }
}

TEST(DeclaredGpuProbe, UuidsAreStablePerNodeAndDistinctAcrossNodesAndGpus) {
  auto uuids = [](const std::string& node) {
    StatusOr<GpuInventory> inventory = DeclaredGpuProbe(node, 4, "GPU", 0).Probe();
    std::vector<std::string> result;
    for (const Gpu& gpu : inventory->gpus) {
      result.push_back(gpu.uuid);
    }
    return result;
  };
  const std::vector<std::string> node_a = uuids("node-a");
  EXPECT_EQ(node_a, uuids("node-a"));
  EXPECT_EQ(std::set<std::string>(node_a.begin(), node_a.end()).size(), 4u);

  const std::vector<std::string> node_b = uuids("node-b");
  std::set<std::string> all(node_a.begin(), node_a.end());
  all.insert(node_b.begin(), node_b.end());
  EXPECT_EQ(all.size(), 8u);

  // The separator keeps a name ending in a digit apart from the GPU index that follows it.
  EXPECT_NE(DeclaredGpuProbe("node1", 12, "GPU", 0).Probe()->gpus[1].uuid,
            DeclaredGpuProbe("node", 12, "GPU", 0).Probe()->gpus[11].uuid);
}

TEST(DeclaredGpuProbe, ZeroGpusIsAnEmptyInventory) {
  StatusOr<GpuInventory> inventory = DeclaredGpuProbe("node-a", 0, "GPU", 0).Probe();
  ASSERT_TRUE(inventory.ok());
  EXPECT_TRUE(inventory->gpus.empty());
  EXPECT_TRUE(inventory->links.empty());
}

TEST(DeclaredGpuProbe, RejectsNegativeCount) {
  StatusOr<GpuInventory> inventory = DeclaredGpuProbe("node-a", -1, "GPU", 0).Probe();
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cohort::agent
