#include "model/node_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "common/units.h"
#include "model/limits.h"

namespace cohort {
namespace {

// The text as JSON writes it (quoted, escaped), shortened: ids from the network may be anything.
std::string Quoted(std::string_view s) {
  std::string text(s.substr(0, 60));
  if (s.size() > 60) text += "...";
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool IsIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Letters, digits and the characters of IPv4 and IPv6 addresses and DNS names: no spaces, and
// no ',' (COHORT_HOSTS is a comma-separated list of addresses).
bool IsAddressChar(char c) { return IsIdChar(c) || c == ':' || c == '%' || c == '[' || c == ']'; }

class Problems {
 public:
  void Add(std::string field, std::string reason) {
    list_.push_back(fmt::format("{}: {}", field, reason));
  }
  // A text field of at most `max` bytes.
  void Text(const std::string& field, const std::string& value, size_t max) {
    if (value.size() > max) {
      Add(field, fmt::format("must be at most {} characters, got {}", max, value.size()));
    }
  }
  std::vector<std::string> Take() { return std::move(list_); }
  bool empty() const { return list_.empty(); }

 private:
  std::vector<std::string> list_;
};

void CheckGpus(const NodeInfo& info, Problems& problems) {
  const auto count = static_cast<int64_t>(info.gpus.size());
  if (count > kMaxNodeGpus) {
    problems.Add("gpus", fmt::format("a node has at most {} GPUs, got {}", kMaxNodeGpus, count));
    return;  // one line, not one per GPU
  }
  for (size_t i = 0; i < info.gpus.size(); ++i) {
    const Gpu& gpu = info.gpus[i];
    const std::string at = fmt::format("gpus[{}]", i);
    // CUDA_VISIBLE_DEVICES counts GPUs in this order, so the list is indexed from 0 densely.
    if (gpu.index != static_cast<int>(i)) {
      problems.Add(at + ".index", fmt::format("expected {}, got {}", i, gpu.index));
    }
    if (gpu.memory_bytes < 0 || gpu.memory_bytes > kMaxGpuMemoryBytes) {
      problems.Add(at + ".memory_bytes",
                   fmt::format("must be from 0 to {} ({}), got {}", kMaxGpuMemoryBytes,
                               FormatByteSize(kMaxGpuMemoryBytes), gpu.memory_bytes));
    }
    if (gpu.numa_node < -1 || gpu.numa_node > kMaxNumaNode) {
      problems.Add(at + ".numa_node", fmt::format("must be from -1 (unknown) to {}, got {}",
                                                  kMaxNumaNode, gpu.numa_node));
    }
    problems.Text(at + ".uuid", gpu.uuid, kMaxGpuModelLength);
    problems.Text(at + ".model", gpu.model, kMaxGpuModelLength);
    problems.Text(at + ".pci_bus_id", gpu.pci_bus_id, kMaxGpuModelLength);
  }
  const auto max_links = static_cast<size_t>(count * (count - 1) / 2);
  if (info.gpu_links.size() > max_links) {
    problems.Add("gpu_links", fmt::format("{} GPUs have at most {} links (one per pair), got {}",
                                          count, max_links, info.gpu_links.size()));
    return;
  }
  std::set<std::pair<int, int>> pairs;
  for (size_t i = 0; i < info.gpu_links.size(); ++i) {
    const GpuLink& link = info.gpu_links[i];
    const std::string at = fmt::format("gpu_links[{}]", i);
    bool in_range = true;
    for (auto [name, end] : {std::pair{".a", link.a}, std::pair{".b", link.b}}) {
      if (end < 0 || end >= count) {
        problems.Add(at + name, fmt::format("is not the index of a GPU of this node, got {}", end));
        in_range = false;
      }
    }
    if (in_range && link.a == link.b) {
      problems.Add(at, fmt::format("links GPU {} to itself", link.a));
    } else if (in_range &&
               !pairs.emplace(std::min(link.a, link.b), std::max(link.a, link.b)).second) {
      problems.Add(at, fmt::format("GPUs {} and {} are linked twice", link.a, link.b));
    }
    if (link.nvlinks < 0 || link.nvlinks > kMaxNvLinks) {
      problems.Add(at + ".nvlinks",
                   fmt::format("must be from 0 to {}, got {}", kMaxNvLinks, link.nvlinks));
    }
  }
}

void CheckLabels(const NodeInfo& info, Problems& problems) {
  if (info.labels.size() > kMaxLabels) {
    problems.Add("labels", fmt::format("a node has at most {} labels, got {}", kMaxLabels,
                                       info.labels.size()));
    return;
  }
  for (const auto& [key, value] : info.labels) {
    const std::string at = "labels." + Quoted(key);
    if (!IsValidLabelKey(key)) {
      problems.Add(at, fmt::format("not a valid label name: use 1 to {} letters, digits, '.', "
                                   "'_', '/' and '-'",
                                   kMaxLabelKeyLength));
    }
    problems.Text(at, value, kMaxLabelValueLength);
  }
}

}  // namespace

bool IsValidNodeId(std::string_view id) {
  return !id.empty() && id.size() <= kMaxNodeIdLength && id[0] != '.' && id[0] != '_' &&
         id[0] != '-' && std::all_of(id.begin(), id.end(), IsIdChar);
}

Status CheckNodeId(std::string_view id) {
  if (IsValidNodeId(id)) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("node: {} is not a valid node id: {}", Quoted(id), kNodeIdRule));
}

bool IsValidLabelKey(std::string_view key) {
  auto allowed = [](char c) { return IsIdChar(c) || c == '/'; };
  return !key.empty() && key.size() <= kMaxLabelKeyLength &&
         std::all_of(key.begin(), key.end(), allowed);
}

Status ValidateNodeInfo(const NodeInfo& info) {
  Problems problems;
  if (!IsValidNodeId(info.id)) {
    problems.Add("id", fmt::format("{} is not a valid node id: {}", Quoted(info.id), kNodeIdRule));
  }
  if (info.address.empty() || info.address.size() > kMaxAddressLength ||
      !std::all_of(info.address.begin(), info.address.end(), IsAddressChar)) {
    problems.Add("address",
                 fmt::format("{} is not a host name or IP address: use 1 to {} letters, digits, "
                             "'.', '-', '_', ':', '%', '[' or ']'",
                             Quoted(info.address), kMaxAddressLength));
  }
  if (info.milli_cpus <= 0 || info.milli_cpus > kMaxNodeCpus * 1000) {
    problems.Add("cpus", fmt::format("must be greater than 0 and at most {}, got {}", kMaxNodeCpus,
                                     FormatMilliCpus(info.milli_cpus)));
  }
  if (info.memory_bytes <= 0 || info.memory_bytes > kMaxNodeMemoryBytes) {
    problems.Add(
        "memory_bytes",
        fmt::format("must be greater than 0 and at most {} ({}), got {}", kMaxNodeMemoryBytes,
                    FormatByteSize(kMaxNodeMemoryBytes), info.memory_bytes));
  }
  CheckGpus(info, problems);
  if (info.ports.first < 1 || info.ports.last > 65535 || info.ports.first > info.ports.last) {
    problems.Add("ports", fmt::format("{}-{} is not a port range within 1-65535", info.ports.first,
                                      info.ports.last));
  }
  CheckLabels(info, problems);
  problems.Text("gpu_source", info.gpu_source, kMaxVersionLength);
  problems.Text("agent_version", info.agent_version, kMaxVersionLength);
  problems.Text("instance", info.instance, kMaxVersionLength);
  if (problems.empty()) return Status::Ok();
  return Status::InvalidArgument("invalid node registration", problems.Take());
}

}  // namespace cohort
