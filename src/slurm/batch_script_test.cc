#include "slurm/batch_script.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cohort::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

BatchScript Read(std::string_view text) {
  auto script = ReadBatchScript(text);
  EXPECT_TRUE(script.ok()) << script.status().ToString();
  return script.ok() ? *script : BatchScript{};
}

std::string ErrorOf(std::string_view text) {
  auto script = ReadBatchScript(text);
  return script.ok() ? "ok" : script.status().message();
}

std::vector<std::string> Split(std::string_view text) {
  auto args = SplitDirective(text, 1);
  EXPECT_TRUE(args.ok()) << args.status().ToString();
  return args.ok() ? *args : std::vector<std::string>{"(error)"};
}

TEST(ReadBatchScript, TakesDirectivesUpToTheFirstCommand) {
  const BatchScript script = Read(
      "#!/bin/bash -l\n"
      "#SBATCH -J train --nodes=2\n"
      "\n"
      "# a comment, then an indented one\n"
      "   # #SBATCH --time=5 (not in the first column: a comment)\n"
      "#SBATCH --gpus-per-node=8\n"
      "module load cuda\n"
      "#SBATCH --time=10\n");
  EXPECT_EQ(script.interpreter, "/bin/bash -l");
  EXPECT_THAT(script.directives, ElementsAre(BatchDirective{2, {"-J", "train", "--nodes=2"}},
                                             BatchDirective{6, {"--gpus-per-node=8"}}));
  EXPECT_THAT(script.warnings, IsEmpty());
}

TEST(ReadBatchScript, ReadsTheOldMagicWordWithOneWarning) {
  const BatchScript script = Read("#!/bin/sh\n#SLURM -N 1\n#SLURM -n 4\n#SBATCH -c 2\n");
  EXPECT_THAT(script.directives,
              ElementsAre(BatchDirective{2, {"-N", "1"}}, BatchDirective{3, {"-n", "4"}},
                          BatchDirective{4, {"-c", "2"}}));
  EXPECT_THAT(script.warnings, ElementsAre(HasSubstr("line 2: #SLURM is read as #SBATCH")));
}

TEST(ReadBatchScript, ALastLineWithoutNewlineAndAnEmptyDirectiveAreFine) {
  EXPECT_THAT(Read("#!/bin/sh\n#SBATCH\n#SBATCH -n 2").directives,
              ElementsAre(BatchDirective{3, {"-n", "2"}}));
  EXPECT_THAT(Read("#!/bin/sh").directives, IsEmpty());
}

TEST(SplitDirective, SplitsAsSlurmDoes) {
  EXPECT_THAT(Split("  --job-name=\"my job\"  -t 5"), ElementsAre("--job-name=my job", "-t", "5"));
  EXPECT_THAT(Split("--comment='a \"b\" c'"), ElementsAre("--comment=a \"b\" c"));
  EXPECT_THAT(Split("--comment=a'b c'\"d e\""), ElementsAre("--comment=ab cd e"));
  EXPECT_THAT(Split("--comment=a\\ b \\\"x\\\""), ElementsAre("--comment=a b", "\"x\""));
  EXPECT_THAT(Split("--comment=\"in \\\" quotes\""), ElementsAre("--comment=in \" quotes"));
  EXPECT_THAT(Split("-o out.log # where the output goes"), ElementsAre("-o", "out.log"));
  // An unquoted '#' ends the line even inside an argument, as in Slurm.
  EXPECT_THAT(Split("--job-name=a#b -t 5"), ElementsAre("--job-name=a"));
  EXPECT_THAT(Split("--job-name='a#b' -t 5"), ElementsAre("--job-name=a#b", "-t", "5"));
  EXPECT_THAT(Split("--job-name=a\\#b"), ElementsAre("--job-name=a#b"));
  EXPECT_THAT(Split("--comment \"\" -t 5"), ElementsAre("--comment", "", "-t", "5"));
  EXPECT_THAT(Split("-t 5 \\"), ElementsAre("-t", "5"));
  EXPECT_THAT(Split("-t 5\\"), ElementsAre("-t", "5"));
  EXPECT_THAT(Split("\t-N\t2\r"), ElementsAre("-N", "2"));
}

TEST(SplitDirective, RefusesAnUnmatchedQuoteNamingTheLine) {
  auto args = SplitDirective("--job-name='oops", 7);
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().message(), "line 7: the quote ' is never closed");
}

TEST(ReadBatchScript, RefusesWhatSlurmRefuses) {
  EXPECT_EQ(ErrorOf(""), "Batch script is empty!");
  EXPECT_EQ(ErrorOf(" \n\t\n"), "Batch script contains only whitespace!");
  EXPECT_EQ(ErrorOf("echo hi\n"),
            "This does not look like a batch script. The first line must start with #! followed "
            "by the path to an interpreter. For instance: #!/bin/sh");
  EXPECT_EQ(ErrorOf(" #!/bin/sh\n"), ErrorOf("echo hi\n"));
  EXPECT_THAT(ErrorOf(std::string("#!/bin/sh\necho a\0b\n", 19)),
              HasSubstr("line 2: a batch script may not contain a NUL"));
  EXPECT_THAT(ErrorOf("#!/bin/sh\n#SBATCH -N 1\r\necho\r\n"),
              HasSubstr("line 2: Batch script contains DOS line breaks"));
  EXPECT_THAT(ErrorOf("#!/bin/sh\n#SBATCH -n 1\n#SBATCH hetjob\n#SBATCH -n 2\n"),
              HasSubstr("line 3: heterogeneous jobs"));
  EXPECT_THAT(ErrorOf("#!/bin/sh\n#SBATCH  PackJob\n"), HasSubstr("line 2: heterogeneous jobs"));
  EXPECT_THAT(ErrorOf("#!/bin/sh\n#SBATCH : -n 2\n"), HasSubstr("line 2: heterogeneous jobs"));
  EXPECT_THAT(ErrorOf("#!/bin/sh\n\n#SBATCH -J \"x\n"),
              HasSubstr("line 3: the quote \" is never closed"));
  // Only directives are split: a bad quote in a command or after them is the shell's business.
  EXPECT_EQ(ErrorOf("#!/bin/sh\necho \"x\n#SBATCH -J \"x\n"), "ok");
}

TEST(ReadBatchScript, IsBounded) {
  const std::string header = "#!/bin/sh\n";
  std::string script = header + "#SBATCH --comment=" + std::string(kMaxDirectiveLineBytes, 'x');
  EXPECT_THAT(ErrorOf(script), HasSubstr("line 2: the #SBATCH line is 65554 bytes, more than the "
                                         "64 KiB a directive line may be"));
  // A long line that is not a directive is the script's own business.
  EXPECT_EQ(ErrorOf(header + "# " + std::string(kMaxDirectiveLineBytes, 'x') + "\n"), "ok");

  std::string big = header + "#SBATCH -J big\n";
  big += std::string(kMaxBatchScriptBytes - big.size(), '\n');
  EXPECT_THAT(Read(big).directives, ElementsAre(BatchDirective{2, {"-J", "big"}}));
  EXPECT_THAT(ErrorOf(big + "\n"), HasSubstr("is 4194305 bytes, more than the 4 MiB"));
}

}  // namespace
}  // namespace cohort::slurm
