#include "slurm/sbatch_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "slurm/sbatch_option_table.h"

namespace cohort::slurm {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kGi = int64_t{1} << 30;

SbatchParse FromScript(std::string_view text) {
  auto script = ReadBatchScript(text);
  EXPECT_TRUE(script.ok()) << script.status().ToString();
  if (!script.ok()) return {};
  auto parse = ParseScriptDirectives(*script);
  EXPECT_TRUE(parse.ok()) << parse.status().ToString();
  return parse.ok() ? *parse : SbatchParse{};
}

SbatchParse FromCommandLine(const std::vector<std::string>& args) {
  auto parse = ParseSbatchArguments(args, Origin::CommandLine());
  EXPECT_TRUE(parse.ok()) << parse.status().ToString();
  return parse.ok() ? *parse : SbatchParse{};
}

Status ScriptError(std::string_view text) {
  auto script = ReadBatchScript(text);
  if (!script.ok()) return script.status();
  auto parse = ParseScriptDirectives(*script);
  return parse.ok() ? Status::Ok() : parse.status();
}

TEST(SbatchOptions, ReadsARealTrainingScript) {
  const SbatchParse parse = FromScript(R"(#!/bin/bash
#SBATCH --job-name=llama-ft
#SBATCH -N 2
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:a100:4
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=1-00:00:00
#SBATCH --output=logs/%x-%j.out --error=logs/%x-%j.err
#SBATCH --array=0-9%2
#SBATCH -p gpu -q high
#SBATCH --dependency=afterok:12:13
#SBATCH --requeue
#SBATCH --signal=B:USR1@120
#SBATCH -D /work/llama
#SBATCH --export=ALL,SEED=1
#SBATCH -C "a100&ib" --exclusive
#SBATCH --comment "fine-tune run"   # why it runs
#SBATCH --open-mode=append --kill-on-invalid-dep=yes

srun python train.py
)");
  const SbatchOptions& o = parse.options;
  EXPECT_EQ(o.job_name, "llama-ft");
  EXPECT_EQ(o.nodes, (NodeRange{2, 2}));
  EXPECT_EQ(o.ntasks_per_node, 4);
  EXPECT_EQ(o.gres_gpus, (GpuRequest{"a100", 4}));
  EXPECT_EQ(o.cpus_per_task, 8);
  EXPECT_EQ(o.mem, 64 * kGi);
  EXPECT_EQ(o.time, (TimeLimit{false, hours(24)}));
  EXPECT_EQ(o.output, "logs/%x-%j.out");
  EXPECT_EQ(o.error, "logs/%x-%j.err");
  ASSERT_TRUE(o.array.has_value());
  EXPECT_EQ(o.array->indices.size(), 10u);
  EXPECT_EQ(o.array->max_parallel, 2);
  EXPECT_EQ(o.array_text, "0-9%2");
  EXPECT_EQ(o.partition, "gpu");
  EXPECT_EQ(o.qos, "high");
  EXPECT_THAT(*o.dependency, ElementsAre(Dependency{12, DependencyCondition::kSuccess},
                                         Dependency{13, DependencyCondition::kSuccess}));
  EXPECT_EQ(o.requeue, true);
  EXPECT_EQ(o.signal, (SignalSpec{10, "USR1", seconds(120), true, false}));
  EXPECT_EQ(o.chdir, "/work/llama");
  EXPECT_EQ(o.export_env, (ExportSpec{ExportSpec::Base::kAll, {{"SEED", "1"}}}));
  EXPECT_EQ(o.constraint, "a100&ib");
  EXPECT_EQ(o.exclusive, "");
  EXPECT_EQ(o.comment, "fine-tune run");
  EXPECT_EQ(o.open_mode, OpenMode::kAppend);
  EXPECT_EQ(o.kill_on_invalid_dep, true);
  EXPECT_THAT(parse.unknown, IsEmpty());
  EXPECT_THAT(parse.warnings, IsEmpty());
  EXPECT_THAT(parse.operands, IsEmpty());
}

TEST(SbatchOptions, TakesEveryWayOfWritingAValue) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--ntasks=16"}, {"--ntasks", "16"}, {"-n16"}, {"-n", "16"}}) {
    EXPECT_EQ(FromCommandLine(args).options.ntasks, 16) << args[0];
  }
  // Flags share one dash; an option with a value ends the group.
  const SbatchOptions o = FromCommandLine({"-WQJname", "--parsable"}).options;
  EXPECT_TRUE(o.wait);
  EXPECT_TRUE(o.quiet);
  EXPECT_TRUE(o.parsable);
  EXPECT_EQ(o.job_name, "name");
  // As getopt: a required value is the next argument whatever it looks like.
  EXPECT_EQ(FromCommandLine({"-J", "-x"}).options.job_name, "-x");
  EXPECT_EQ(FromCommandLine({"--comment="}).options.comment, "");
}

TEST(SbatchOptions, TheLastOfAnOptionWins) {
  const SbatchParse parse =
      FromScript("#!/bin/sh\n#SBATCH -t 10 --requeue\n#SBATCH --time=20 --no-requeue\n");
  EXPECT_EQ(parse.options.time->duration, std::chrono::minutes(20));
  EXPECT_EQ(parse.options.requeue, false);
}

TEST(SbatchOptions, AValueMayFollowOnTheNextDirectiveLineAsInSlurm) {
  EXPECT_EQ(FromScript("#!/bin/sh\n#SBATCH --job-name\n#SBATCH two-lines\n").options.job_name,
            "two-lines");
}

TEST(SbatchOptions, WarnsAboutWhatMeansNothingOnCohortNamingTheLine) {
  const SbatchParse parse = FromScript(
      "#!/bin/sh\n#SBATCH --mail-type=END,FAIL --mail-user=me@lab.org\n#SBATCH -A proj42\n"
      "#SBATCH --hint=nomultithread -v\n#SLURM --nice=10\n");
  EXPECT_EQ(parse.options.mail_type, "END,FAIL");
  EXPECT_EQ(parse.options.account, "proj42");
  EXPECT_THAT(parse.warnings,
              ElementsAre(HasSubstr("line 5: #SLURM is read as #SBATCH"),
                          "line 2: --mail-type=END,FAIL: ignored: Cohort sends no mail",
                          "line 2: --mail-user=me@lab.org: ignored: Cohort sends no mail",
                          "line 3: -A proj42: kept to be shown (SLURM_JOB_ACCOUNT); Cohort "
                          "accounts by team",
                          "line 4: --hint=nomultithread: ignored: Cohort does not place by core "
                          "or thread",
                          "line 4: -v: ignored: Cohort's sbatch has one level of detail",
                          "line 5: --nice=10: ignored: Cohort orders jobs by its own policy"));
  EXPECT_THAT(parse.unknown, IsEmpty());
}

TEST(SbatchOptions, ListsUnknownAndUnsupportedOptionsWithTheirLines) {
  const SbatchParse parse = FromScript(
      "#!/bin/sh\n#SBATCH -N 1\n\n#SBATCH --frobnicate=3\n#SBATCH --nodelist=n[1-4] -X\n"
      "#SBATCH --turbo fast -t 5\n#SBATCH --begin now+1hour\n");
  EXPECT_THAT(parse.unknown,
              ElementsAre(UnknownOption{"--frobnicate=3", Origin::ScriptLine(4), ""},
                          UnknownOption{"--nodelist=n[1-4]", Origin::ScriptLine(5),
                                        "Cohort chooses the nodes itself"},
                          UnknownOption{"-X", Origin::ScriptLine(5), ""},
                          UnknownOption{"--turbo fast", Origin::ScriptLine(6), ""},
                          UnknownOption{"--begin=now+1hour", Origin::ScriptLine(7),
                                        "Cohort starts a job as soon as it can; it takes no "
                                        "start time"}));
  EXPECT_EQ(parse.options.time->duration, std::chrono::minutes(5));
  EXPECT_EQ(parse.options.nodes, (NodeRange{1, 1}));
}

TEST(SbatchOptions, OnTheCommandLineTheScriptAndItsArgumentsFollowTheOptions) {
  SbatchParse parse = FromCommandLine({"-N", "2", "train.sh", "--epochs", "3", "-N", "9"});
  EXPECT_EQ(parse.options.nodes, (NodeRange{2, 2}));
  EXPECT_THAT(parse.operands, ElementsAre("train.sh", "--epochs", "3", "-N", "9"));
  parse = FromCommandLine({"-t", "5", "--", "-weird-name.sh"});
  EXPECT_THAT(parse.operands, ElementsAre("-weird-name.sh"));
  // An unknown option on the command line takes no value: what follows may be the script.
  parse = FromCommandLine({"--turbo", "train.sh"});
  EXPECT_THAT(parse.unknown, ElementsAre(UnknownOption{"--turbo", Origin::CommandLine(), ""}));
  EXPECT_THAT(parse.operands, ElementsAre("train.sh"));
}

TEST(SbatchOptions, ListsEveryErrorWithItsLineOptionAndReason) {
  const Status status = ScriptError(
      "#!/bin/sh\n#SBATCH --time=soon\n#SBATCH -N 2 --gres=mps:100\n#SBATCH -a 0-x\n"
      "#SBATCH --dependency=singleton\n");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.details(),
              ElementsAre(HasSubstr("line 2: --time=soon: \"soon\" is not a time limit"),
                          HasSubstr("line 3: --gres=mps:100: \"mps:100\": Cohort allocates GPUs "
                                    "only"),
                          HasSubstr("line 4: -a 0-x: indices: \"0-x\" is not an index"),
                          HasSubstr("line 5: --dependency=singleton: \"singleton\": singleton")));
  EXPECT_THAT(status.message(), HasSubstr("line 2: --time=soon"));
  EXPECT_THAT(status.message(), HasSubstr("; line 5: --dependency=singleton"));
}

TEST(SbatchOptions, RefusesMalformedUse) {
  auto error = [](const std::vector<std::string>& args) {
    auto parse = ParseSbatchArguments(args, Origin::CommandLine());
    return parse.ok() ? std::string("ok") : parse.status().message();
  };
  EXPECT_EQ(error({"--job=x"}),
            "command line: --job is short for --job-name; write the option "
            "in full");
  EXPECT_THAT(error({"--mem-per=4G"}), HasSubstr("--mem-per is short for --mem-per-cpu or "
                                                 "--mem-per-gpu"));
  EXPECT_EQ(error({"--wait=1"}), "command line: --wait takes no value");
  EXPECT_EQ(error({"--time"}), "command line: --time needs a value");
  EXPECT_EQ(error({"-t"}), "command line: -t (--time) needs a value");
  EXPECT_THAT(error({"--exclusive=all"}), HasSubstr("give user, mcs or topo"));
  EXPECT_THAT(error({"--requeue=now"}), HasSubstr("the only value is expedite"));
  EXPECT_EQ(error({"--mem=4G", "--mem-per-cpu=1G"}),
            "--mem (command line) and --mem-per-cpu (command line) are mutually exclusive, as "
            "in Slurm; give one");
  EXPECT_THAT(error({"--gres=gpu:2", "--gpus-per-node=2"}),
              HasSubstr("--gpus-per-node (command line) and --gres (command line) are mutually"));
  EXPECT_EQ(error({"--gres=none", "--gpus-per-node=2"}), "ok");
  // --requeue's value is optional, so it is only ever written with '='.
  EXPECT_THAT(FromCommandLine({"--requeue", "expedite"}).operands, ElementsAre("expedite"));

  EXPECT_THAT(ScriptError("#!/bin/sh\n#SBATCH -N 1 stray\n").message(),
              HasSubstr("line 2: \"stray\" is not an option"));
  EXPECT_THAT(ScriptError("#!/bin/sh\n#SBATCH --wrap=\"hostname\"\n").message(),
              HasSubstr("line 2: --wrap is for the command line"));
  EXPECT_THAT(ScriptError("#!/bin/sh\n#SBATCH --mem=1G\n#SBATCH --mem-per-gpu=8G\n").message(),
              HasSubstr("--mem (line 2) and --mem-per-gpu (line 3) are mutually exclusive"));
  EXPECT_THAT(ScriptError("#!/bin/sh\n#SBATCH -c 4 --cpus-per-gpu=8\n").message(),
              HasSubstr("--cpus-per-task (line 2) and --cpus-per-gpu (line 2) are mutually "
                        "exclusive"));
}

TEST(MergeSbatchOptions, TheCommandLineOverridesTheScript) {
  const SbatchParse script = FromScript(
      "#!/bin/sh\n#SBATCH -J from-script -N 2 -t 60 --mem-per-cpu=4G --gres=gpu:4\n"
      "#SBATCH -W --mail-type=END --frobnicate -c 8 --array=0-9:3\n");
  const SbatchParse command_line = FromCommandLine(
      {"-J", "from-cli", "--mem=100G", "--gpus-per-node=2", "--parsable", "--cpus-per-gpu=4",
       "--array=1-3", "--hint=compute_bound", "-X", "job.sh", "arg"});
  const SbatchParse merged = MergeSbatchOptions(script, command_line);
  const SbatchOptions& o = merged.options;
  EXPECT_EQ(o.job_name, "from-cli");
  EXPECT_EQ(o.nodes, (NodeRange{2, 2}));  // only the script's
  EXPECT_EQ(o.time->duration, std::chrono::minutes(60));
  EXPECT_EQ(o.mem, 100 * kGi);
  EXPECT_FALSE(o.mem_per_cpu.has_value());  // one memory request: the command line's
  EXPECT_EQ(o.gpus_per_node, (GpuRequest{"", 2}));
  EXPECT_FALSE(o.gres_gpus.has_value());  // one GPUs-per-node request: the command line's
  EXPECT_EQ(o.cpus_per_gpu, 4);
  EXPECT_FALSE(o.cpus_per_task.has_value());  // one CPU request: the command line's
  EXPECT_EQ(o.array, (ArraySpec{{1, 2, 3}, 0}));
  EXPECT_EQ(o.array_text, "1-3");  // with the indices it stands for
  EXPECT_TRUE(o.wait);
  EXPECT_TRUE(o.parsable);
  EXPECT_EQ(o.mail_type, "END");
  EXPECT_THAT(merged.unknown, ElementsAre(UnknownOption{"--frobnicate", Origin::ScriptLine(3), ""},
                                          UnknownOption{"-X", Origin::CommandLine(), ""}));
  EXPECT_THAT(merged.warnings, ElementsAre(HasSubstr("line 3: --mail-type=END"),
                                           HasSubstr("command line: --hint=compute_bound")));
  EXPECT_THAT(merged.operands, ElementsAre("job.sh", "arg"));

  // What the command line leaves unset, the script keeps.
  const SbatchParse kept = MergeSbatchOptions(script, FromCommandLine({}));
  EXPECT_EQ(kept.options, script.options);
}

TEST(CheckUnknown, IsOneErrorListingEveryUnknownOptionOrWarningsWhenIgnored) {
  const SbatchParse parse = MergeSbatchOptions(
      FromScript("#!/bin/sh\n#SBATCH -N 1\n\n#SBATCH --foo\n\n\n#SBATCH --bar=2 -w n1\n"),
      FromCommandLine({"--baz"}));
  auto refused = CheckUnknown(parse, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "unknown or unsupported sbatch options: line 4: --foo, line 7: --bar=2, line 7: -w n1 "
            "(Cohort chooses the nodes itself), command line: --baz; use --ignore-unknown to run "
            "anyway");
  EXPECT_EQ(refused.status().details().size(), 4u);

  auto ignored = CheckUnknown(parse, true);
  ASSERT_TRUE(ignored.ok());
  EXPECT_THAT(*ignored, ElementsAre("line 4: --foo: ignored (--ignore-unknown)",
                                    "line 7: --bar=2: ignored (--ignore-unknown)",
                                    HasSubstr("line 7: -w n1 (Cohort chooses"),
                                    "command line: --baz: ignored (--ignore-unknown)"));
  EXPECT_THAT(*CheckUnknown(FromCommandLine({"-N", "1"}), false), IsEmpty());
}

TEST(SbatchOptionTable, EveryOptionIsOnceAndHandled) {
  std::set<std::string_view> long_names;
  std::set<char> short_names;
  for (const SbatchOptionSpec& spec : SbatchOptionTable()) {
    EXPECT_TRUE(long_names.insert(spec.name).second) << spec.name;
    if (spec.short_name) {
      EXPECT_TRUE(short_names.insert(spec.short_name).second) << spec.name;
    }
    if (spec.handling == OptionHandling::kApply) {
      EXPECT_NE(spec.apply, nullptr) << spec.name;
    } else {
      EXPECT_EQ(spec.apply, nullptr) << spec.name;
      EXPECT_FALSE(spec.note.empty()) << spec.name;
    }
  }
  // sbatch(1)'s short options, every one of them.
  EXPECT_EQ(std::string(short_names.begin(), short_names.end()),
            "ABCDFGHJLMNOQSVWabcdehikmnopqstvwx");
  EXPECT_EQ(FindShortOption('N')->name, "nodes");
  EXPECT_EQ(FindLongOption("gpus-per-task")->handling, OptionHandling::kApply);
  EXPECT_EQ(FindLongOption("nodelist")->handling, OptionHandling::kUnsupported);
  EXPECT_EQ(FindLongOption("mem-bind")->handling, OptionHandling::kIgnore);
  EXPECT_EQ(FindLongOption("no-such-option"), nullptr);
}

}  // namespace
}  // namespace cohort::slurm
