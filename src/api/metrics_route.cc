// GET /metrics: the cluster, the API and the process in Prometheus' text format
// (docs/observability.md, "Prometheus metrics"). Any user's token may read it: every value is
// one `cohort nodes`, `cohort jobs` and `cohort team list` already show to every user
// (docs/security.md, "The route matrix").
#include "api/api_server.h"
#include "api/process_metrics.h"
#include "common/prometheus_text.h"
#include "master/cluster_metrics.h"

namespace cohort::api {

StatusOr<HttpResponse> ApiServer::Metrics(const Call& call) {
  PrometheusText out;
  master::WriteClusterMetrics(master_, out);
  request_metrics_->Write(out);
  WriteProcessMetrics(out);
  return HttpResponse{200, std::string(kPrometheusContentType), out.Take()};
}

}  // namespace cohort::api
