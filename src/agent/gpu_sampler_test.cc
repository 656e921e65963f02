// The GPU samplers: NVML's against the fake libnvidia-ml.so.1 of tests/fake_nvml, whose load a
// test sets through FAKE_NVML_UTILIZATION_FILE while the sampler stays open, and the declared
// GPUs', which know nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/gpu_sampler.h"
#include "agent/nvml_gpu_sampler.h"

#ifndef FAKE_NVML_PATH
#error "FAKE_NVML_PATH must name the fake libnvidia-ml.so.1 built from tests/fake_nvml"
#endif
#ifndef FAKE_NVML_NO_UTILIZATION_PATH
#error "FAKE_NVML_NO_UTILIZATION_PATH must name the fake built without utilisation"
#endif

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMiB = 1024 * 1024;
const Timestamp kAt = FromMicros(1'700'000'000'000'000);

class NvmlGpuSamplerTest : public ::testing::Test {
 protected:
  NvmlGpuSamplerTest()
      : load_file_(fs::temp_directory_path() /
                   ("cohort-fake-nvml-load-" + std::to_string(::getpid()))) {
    for (const char* name : {"FAKE_NVML_GPUS", "FAKE_NVML_MODEL", "FAKE_NVML_MEMORY_MIB",
                             "FAKE_NVML_FAIL_INIT", "FAKE_NVML_UTILIZATION_FILE"}) {
      unsetenv(name);
    }
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_UTILIZATION_FILE", load_file_.c_str(), 1);
  }
  ~NvmlGpuSamplerTest() override {
    unsetenv("FAKE_NVML_UTILIZATION_FILE");
    fs::remove(load_file_);
  }

  void SetLoad(const std::string& lines) { std::ofstream(load_file_) << lines; }

  fs::path load_file_;
};

TEST_F(NvmlGpuSamplerTest, ReadsUtilisationAndMemoryAndFollowsChanges) {
  auto sampler = NvmlGpuSampler::Open(FAKE_NVML_PATH);
  ASSERT_TRUE(sampler.ok()) << sampler.status().ToString();
  SetLoad("0 37 1073741824\n1 100 0\n");
  auto samples = (*sampler)->Sample(kAt);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].at, kAt);
  EXPECT_EQ(samples[0].utilization_percent, 37);
  EXPECT_EQ(samples[0].memory_used_bytes, 1024 * kMiB);
  EXPECT_EQ(samples[1].utilization_percent, 100);
  EXPECT_EQ(samples[1].memory_used_bytes, 0);

  // The same sampler, NVML still open, sees what changed.
  SetLoad("0 5 2048\n");
  samples = (*sampler)->Sample(kAt);
  EXPECT_EQ(samples[0].utilization_percent, 5);
  EXPECT_EQ(samples[0].memory_used_bytes, 2048);
  EXPECT_EQ(samples[1].utilization_percent, 0) << "no line: idle";
}

TEST_F(NvmlGpuSamplerTest, AFailingCallLeavesThatFigureUnknown) {
  auto sampler = NvmlGpuSampler::Open(FAKE_NVML_PATH);
  ASSERT_TRUE(sampler.ok()) << sampler.status().ToString();
  SetLoad("0 fail 4096\n");
  auto samples = (*sampler)->Sample(kAt);
  EXPECT_FALSE(samples[0].utilization_percent.has_value());
  EXPECT_EQ(samples[0].memory_used_bytes, 4096);
  // More memory used than the GPU has is a driver's error: unknown rather than wrong.
  SetLoad("0 10 " + std::to_string(int64_t{81559} * kMiB + 1) + "\n");
  samples = (*sampler)->Sample(kAt);
  EXPECT_EQ(samples[0].utilization_percent, 10);
  EXPECT_FALSE(samples[0].memory_used_bytes.has_value());
}

TEST_F(NvmlGpuSamplerTest, ADriverWithoutUtilisationGivesMemoryOnly) {
  auto sampler = NvmlGpuSampler::Open(FAKE_NVML_NO_UTILIZATION_PATH);
  ASSERT_TRUE(sampler.ok()) << sampler.status().ToString();
  SetLoad("0 80 4096\n");
  auto samples = (*sampler)->Sample(kAt);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_FALSE(samples[0].utilization_percent.has_value());
  EXPECT_EQ(samples[0].memory_used_bytes, 4096);
}

TEST_F(NvmlGpuSamplerTest, ABrokenDriverIsRefusedAtOpen) {
  setenv("FAKE_NVML_FAIL_INIT", "1", 1);
  auto sampler = NvmlGpuSampler::Open(FAKE_NVML_PATH);
  unsetenv("FAKE_NVML_FAIL_INIT");
  ASSERT_FALSE(sampler.ok());
  EXPECT_NE(sampler.status().message().find("Driver Not Loaded"), std::string::npos);
  EXPECT_FALSE(NvmlGpuSampler::Open("/nonexistent/libnvidia-ml.so.1").ok());
}

TEST(DeclaredGpuSampler, KnowsNothingOfEveryGpu) {
  DeclaredGpuSampler sampler(3);
  auto samples = sampler.Sample(kAt);
  ASSERT_EQ(samples.size(), 3u);
  for (const auto& [index, sample] : samples) {
    EXPECT_EQ(sample.at, kAt);
    EXPECT_FALSE(sample.utilization_percent.has_value()) << "GPU " << index;
    EXPECT_FALSE(sample.memory_used_bytes.has_value()) << "GPU " << index;
  }
}

}  // namespace
}  // namespace cohort::agent
