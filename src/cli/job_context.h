// The code that travels with a job (docs/data.md, "Code"): `cohort run` and `cohort submit` send
// the current directory, or --context DIR, through the master into the store, and name it in the
// spec's `context`; every task whose group names no workdir starts in an unpacked copy of it.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "client/cohort_client.h"
#include "common/status.h"
#include "model/json.h"

namespace cohort::cli {

struct ContextOptions {
  std::string dir;    // empty: the current directory
  bool none = false;  // --no-context
};

// --context DIR and --no-context on `cmd`.
void AddContextOptions(CLI::App* cmd, ContextOptions& o);

// Sends the code and sets `spec`'s "context" (a job spec, or a sweep's trial), unless --no-context,
// every task group names a workdir, or the directory holds no file to send. Says on stderr what it
// sent.
Status AttachContext(client::CohortClient& c, const ContextOptions& o, Json& spec);

}  // namespace cohort::cli
