// nodes: every node's GPUs, free and held; node drain|undrain|remove: what an admin does to one.
#include <fmt/format.h>

#include "cli/cli.h"
#include "common/units.h"
#include "model/json_errors.h"
#include "os/real_clock.h"

namespace cohort::cli {
namespace {

struct NodesOptions {
  std::string output = "table";
};

struct NodeOptions {
  std::string node;
  std::string reason;
  std::string output = "table";
};

// The GPU's utilisation as its agent last sampled it ("37%"), or "-" when unknown: declared
// GPUs, a driver that cannot tell, an agent that has not sampled yet, an older master.
std::string UtilizationText(const Json& gpu) {
  auto it = gpu.find("utilization");
  if (it == gpu.end() || !it->is_number_integer()) return "-";
  return fmt::format("{}%", it->get<int64_t>());
}

int RunNodes(const GlobalOptions& g, const NodesOptions& o) {
  auto c = Connect(g);
  if (!c.ok()) return Fail("nodes", c.status());
  auto doc = (*c)->Nodes();
  if (!doc.ok()) return Fail("nodes", doc.status());
  if (o.output == "json") {
    fmt::print("{}\n", doc->dump(2));
    return 0;
  }
  try {
    Table nodes(
        {"NODE", "STATE", "ADDRESS", "GPUS", "FREE", "MODEL", "CPUS", "MEMORY", "LAST SEEN"});
    Table gpus({"NODE", "GPU", "MODEL", "MEMORY", "UTIL", "HELD BY"});
    Timestamp now = RealClock().Now();
    for (const auto& n : (*doc)["nodes"]) {
      int total = static_cast<int>(n["gpus"].size());
      int free = 0;
      std::string model = "-";
      for (const auto& gpu : n["gpus"]) {
        bool held = !gpu["job_id"].is_null();
        free += held ? 0 : 1;
        model = gpu["model"].get<std::string>();
        gpus.Add({n["id"].get<std::string>(), std::to_string(gpu["index"].get<int>()), model,
                  gpu["memory"].get<std::string>(), UtilizationText(gpu),
                  held ? fmt::format("job {} {}", gpu["job_id"].get<int64_t>(),
                                     gpu["task"].get<std::string>())
                       : "-"});
      }
      auto seen = ParseTimestamp(n["last_seen"].get<std::string>());
      nodes.Add({n["id"].get<std::string>(), NodeStateText(n), n["address"].get<std::string>(),
                 std::to_string(total), std::to_string(free), model,
                 fmt::format("{}", n["cpus"].get<double>()),
                 FormatByteSizeApprox(n["memory_bytes"].get<int64_t>()),
                 seen.ok() ? ShortDuration(now - *seen) + " ago" : "-"});
    }
    nodes.Print(stdout);
    fmt::print("\n");
    gpus.Print(stdout);
  } catch (const std::exception& e) {
    return Fail("nodes", Status::Internal(fmt::format("unexpected answer: {}", JsonErrorText(e))));
  }
  return 0;
}

int RunNodeChange(const GlobalOptions& g, const std::string& verb, const NodeOptions& o) {
  std::string what = "node " + verb;
  auto c = Connect(g);
  if (!c.ok()) return Fail(what, c.status());
  if (verb == "remove") {
    Status s = (*c)->RemoveNode(o.node);
    if (!s.ok()) return Fail(what, s);
    fmt::print(
        "node {} removed; its tasks are LOST and their jobs requeued. If its agent still "
        "runs, it registers again: stop it first.\n",
        o.node);
    return 0;
  }
  auto doc = verb == "drain" ? (*c)->DrainNode(o.node, o.reason) : (*c)->UndrainNode(o.node);
  if (!doc.ok()) return Fail(what, doc.status());
  if (o.output == "json") {
    fmt::print("{}\n", doc->dump(2));
  } else if (verb == "drain") {
    fmt::print("node {} drained: nothing new is placed there; what runs there keeps running\n",
               o.node);
  } else {
    fmt::print("node {} undrained: it takes new work again\n", o.node);
  }
  return 0;
}

}  // namespace

void AddNodeCommands(CLI::App& app, GlobalOptions& g) {
  auto nodes = std::make_shared<NodesOptions>();
  auto* n = app.add_subcommand("nodes", "List nodes and who holds each GPU");
  AddOutputOption(n, nodes->output);
  n->callback([&g, nodes] {
    int rc = RunNodes(g, *nodes);
    if (rc) throw CLI::RuntimeError(rc);
  });

  auto* node = app.add_subcommand("node", "Change one node: drain, undrain, remove");
  node->require_subcommand(1);
  struct Verb {
    const char* name;
    const char* help;
  };
  for (Verb verb : {Verb{"drain", "Place nothing new on NODE; what runs there keeps running"},
                    Verb{"undrain", "Let NODE take new work again"},
                    Verb{"remove", "Forget NODE: its tasks are LOST and their jobs requeued"}}) {
    auto options = std::make_shared<NodeOptions>();
    auto* sub = node->add_subcommand(verb.name, verb.help);
    sub->add_option("NODE", options->node, "The node's id (cohort nodes lists them)")->required();
    if (std::string(verb.name) == "drain") {
      sub->add_option("--reason", options->reason, "Why, for whoever looks at the node later");
    }
    if (std::string(verb.name) != "remove") AddOutputOption(sub, options->output);
    std::string name = verb.name;
    sub->callback([&g, options, name] {
      int rc = RunNodeChange(g, name, *options);
      if (rc) throw CLI::RuntimeError(rc);
    });
  }
}

}  // namespace cohort::cli
