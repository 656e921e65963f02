// Shared pieces of the `cohort` command-line tool: global options, the API client, output.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/cohort_client.h"
#include "common/status.h"
#include "model/json.h"
#include "model/upload_progress.h"

namespace cohort::cli {

struct GlobalOptions {
  std::string master;   // --master, else $COHORT_MASTER, else the default
  std::string token;    // --token, else $COHORT_TOKEN, else the one `cohort login` saved
  std::string ca_file;  // --ca-file, else $COHORT_CA_FILE: the CA of an https:// master
};

// The master URL the user asked for.
std::string MasterUrl(const GlobalOptions& g);
// The token to call the master with: --token, $COHORT_TOKEN, or the saved one ("" if none).
std::string Token(const GlobalOptions& g);
StatusOr<std::unique_ptr<client::CohortClient>> Connect(const GlobalOptions& g);

// Prints "cohort <command>: <message>" and the status details to stderr; returns 1.
int Fail(const std::string& command, const Status& status);
// The job a command line names: its id ("12"), or one job of an array as ARRAY_INDEX ("12_3",
// as sbatch --array names them), which asks the master for the array.
StatusOr<JobId> ResolveJob(client::CohortClient& c, const std::string& text);
// Ends a command's callback with its exit code: CLI11 carries a non-zero one out of Parse.
void Finish(int rc);

// Option checks for floating-point numbers: above `min`, or from `min` on. Their messages name
// the bound ("--rate: must be a number above 0, got x"), unlike CLI11's, which quote the largest
// double.
CLI::Validator NumberAbove(double min);
CLI::Validator NumberFrom(double min);

// The first executable `name` in a directory of $PATH; nullopt if none.
std::optional<std::string> FindOnPath(std::string_view name);

// Asks the master for a one-time dashboard sign-in link for the caller ({code, expires_at,
// user, url}; docs/security.md, "Dashboard sign-in").
StatusOr<Json> SignInLink(client::CohortClient& c);

// The text of a job or sweep spec file; never more than a spec may be (a device or a pipe may not
// say how much it holds).
StatusOr<std::string> ReadSpecFile(const std::string& path);

// Adds `-o/--output` (table or json) to a command.
void AddOutputOption(CLI::App* cmd, std::string& output);

// Aligned columns, as kubectl prints them.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::FILE* out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// A one-line status that rewrites itself while a command waits; silent unless stderr is a
// terminal, so that piped output stays clean.
class Progress {
 public:
  Progress();
  ~Progress();
  void Update(const std::string& line);
  void Done();  // ends the line

 private:
  bool tty_;
  bool shown_ = false;
};

// A CSV field as RFC 4180 has it: quoted when it holds a comma, a quote or a line break.
std::string CsvField(const std::string& text);
// A JSON value as a CSV field: numbers in their shortest exact form, null as an empty field.
std::string CsvValue(const Json& v);

// READY, LOST, ...; "DRAINED" after it when an admin drained it (a node of GET /api/v1/nodes).
std::string NodeStateText(const Json& node);

// "3s", "5m", "2h", "4d": how long ago, or how long something took.
std::string ShortDuration(Duration d);

void AddClusterCommands(CLI::App& app, GlobalOptions& g);
void AddJobCommands(CLI::App& app, GlobalOptions& g);
// cohort shell (shell_command.cc).
void AddShellCommand(CLI::App& app, GlobalOptions& g);
// cohort notebook (notebook_command.cc).
void AddNotebookCommand(CLI::App& app, GlobalOptions& g);
// cohort sbatch (sbatch_command.cc).
void AddSbatchCommand(CLI::App& app, GlobalOptions& g);
// Waits until the job ends (or `timeout_s` passes, if positive), showing its state on a
// terminal; kDeadlineExceeded on the timeout.
StatusOr<Job> WaitForJobEnd(client::CohortClient& c, JobId id, double timeout_s);
void AddNodeCommands(CLI::App& app, GlobalOptions& g);
void AddTeamCommands(CLI::App& app, GlobalOptions& g);
void AddAccountingCommands(CLI::App& app, GlobalOptions& g);
void AddSimCommands(CLI::App& app);
// sim concat, sim split (called by AddSimCommands).
void AddSimTraceCommands(CLI::App* sim);
void AddAuthCommands(CLI::App& app, GlobalOptions& g);
// cohort dashboard (dashboard_command.cc).
void AddDashboardCommand(CLI::App& app, GlobalOptions& g);
void AddSecretCommands(CLI::App& app, GlobalOptions& g);
void AddMetricCommands(CLI::App& app, GlobalOptions& g);
void AddTopCommand(CLI::App& app, GlobalOptions& g);
// cohort sweep submit/list/status/kill/pause/resume (sweep_commands.cc).
void AddSweepCommands(CLI::App& app, GlobalOptions& g);
// cohort artifacts ls/get (artifact_commands.cc).
void AddArtifactCommands(CLI::App& app, GlobalOptions& g);
// Where the upload of a job's outputs stands, on one line: "stored: 12 files, 1.2Gi",
// "uploading (3 of 10 files, 400Mi of 1.2Gi)", "failed: REASON", "none yet".
std::string ArtifactStateText(const std::optional<UploadProgress>& progress);
// cohort data pack (data_commands.cc).
void AddDataCommands(CLI::App& app, GlobalOptions& g);

}  // namespace cohort::cli
