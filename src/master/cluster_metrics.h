// The master's Prometheus series (docs/observability.md, "Prometheus metrics"): nodes and their
// GPUs, teams and their quotas, jobs by state, the queue, and scheduling passes.
//
// Everything comes from what the master holds in memory, through the same functions that answer
// GET /api/v1/nodes and /teams (ListNodes, ListTeams): a scrape never touches the store, and
// costs O(nodes + teams + jobs in memory) on the event loop.
#pragma once

#include "common/prometheus_text.h"
#include "master/master.h"

namespace cohort::master {

void WriteClusterMetrics(const Master& master, PrometheusText& out);

}  // namespace cohort::master
