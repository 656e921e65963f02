// Code that travels with the job (docs/data.md, "Code"): `cd proj && cohort run -- python3
// train.py` works on a node that has no copy of proj, through the master and its store; what
// .cohortignore names stays behind, executable files stay executable, unchanged files are not
// sent again, too much code is refused before anything is sent, and a workdir still wins.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/local_cluster.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(CodeTravels, CohortRunInAProjectDirectoryRunsItsFilesOnTheNode) {
  LocalCluster cluster("codecontext");
  cluster.StartMaster();
  cluster.StartAgent("agent-0", 1);
  const fs::path proj = fs::path(cluster.dir()) / "proj";
  Write(proj / "train.py",
        "import os\n"
        "print('config:', open('lib/config.txt').read().strip())\n"
        "print('files:', sorted(os.listdir('.')))\n"
        "print('run.sh executable:', os.access('run.sh', os.X_OK))\n");
  Write(proj / "lib" / "config.txt", "lr=0.1\n");
  Write(proj / "run.sh", "#!/bin/sh\necho run.sh ran in $(basename $(pwd))\n");
  fs::permissions(proj / "run.sh", fs::perms::owner_exec | fs::perms::group_exec,
                  fs::perm_options::add);
  Write(proj / "data" / "big.bin", std::string(100'000, 'x'));
  Write(proj / ".cohortignore", "data/\n");
  fs::create_symlink("/etc/passwd", proj / "passwd");

  auto run = cluster.Cohort({"run", "--gpus", "1", "--wait", "--", "/usr/bin/python3", "train.py"},
                            proj.string());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("config: lr=0.1"));
  EXPECT_THAT(run.out, HasSubstr("files: ['.cohortignore', 'lib', 'run.sh', 'train.py']"))
      << "data/ stays behind; the link is not sent";
  EXPECT_THAT(run.out, HasSubstr("run.sh executable: True"));
  EXPECT_THAT(run.err, HasSubstr("code: 4 files"));
  EXPECT_THAT(run.err, HasSubstr("left out 1 links or special files"));

  // The same code again: nothing sent. An executable runs as itself.
  auto again = cluster.Cohort({"run", "--wait", "--", "./run.sh"}, proj.string());
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("run.sh ran in work"));
  EXPECT_THAT(again.err, HasSubstr(", 0 sent"));

  // --no-context: an empty directory; --context: another one.
  auto none = cluster.Cohort(
      {"run", "--wait", "--no-context", "--", "sh", "-c", "echo entries=$(ls -A | wc -l)"},
      proj.string());
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_THAT(none.out, HasSubstr("entries=0\n"));
  EXPECT_THAT(none.err, Not(HasSubstr("code:")));
  auto other = cluster.Cohort(
      {"run", "--wait", "--context", (proj / "lib").string(), "--", "cat", "config.txt"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_THAT(other.out, HasSubstr("lr=0.1"));

  // A workdir wins: nothing is sent.
  auto workdir = cluster.Cohort({"run", "--wait", "--workdir", "/tmp", "--", "pwd"}, proj.string());
  ASSERT_EQ(workdir.exit_code, 0) << workdir.err;
  EXPECT_THAT(workdir.out, HasSubstr("/tmp\n"));
  EXPECT_THAT(workdir.err, Not(HasSubstr("code:")));

  // Too much code: refused before anything is sent, saying where the bytes are.
  { std::ofstream(proj / "model.pt"); }
  fs::resize_file(proj / "model.pt", 101 << 20);  // sparse
  auto big = cluster.Cohort({"run", "--", "true"}, proj.string());
  EXPECT_NE(big.exit_code, 0);
  EXPECT_THAT(big.err, HasSubstr("more than the 100Mi a job's code may be"));
  EXPECT_THAT(big.err, HasSubstr("model.pt (101Mi)"));
}

}  // namespace
}  // namespace cohort::testing
