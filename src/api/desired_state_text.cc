#include "api/desired_state_text.h"

#include <string_view>
#include <vector>

#include "api/request_params.h"
#include "model/json.h"

namespace cohort::api {

std::string DesiredStateText(const DesiredState& desired) {
  // Everything but the tasks as ToJson writes it (one place for the document's fields), the
  // tasks spliced into its empty list. Every field but the tasks is copied here:
  // DesiredStateText.IsTheTextOfTheWholeDocument sets each, and fails on one left out.
  DesiredState without_tasks;
  without_tasks.version = desired.version;
  without_tasks.forget = desired.forget;
  without_tasks.node_timeout = desired.node_timeout;
  without_tasks.allow_uploads = desired.allow_uploads;
  without_tasks.refuse_uploads = desired.refuse_uploads;
  without_tasks.forget_uploads = desired.forget_uploads;
  without_tasks.prefetch = desired.prefetch;
  const std::string shell = JsonText(ToJson(without_tasks));
  constexpr std::string_view kTasks = "\"tasks\":[";
  const size_t at = shell.find(kTasks);  // once: no other key of the document is "tasks"
  std::string head = shell.substr(0, at + kTasks.size());
  std::string tail = shell.substr(at + kTasks.size());
  // Each task's text first, then one string of the exact size: appending to a growing string
  // would hold its old and new buffers (three times the text) as it doubles.
  std::vector<std::string> tasks;
  tasks.reserve(desired.tasks.size());
  size_t size = head.size() + tail.size();
  for (const auto& launch : desired.tasks) {
    tasks.push_back(JsonText(ToJson(launch)));
    size += tasks.back().size() + 1;
  }
  std::string text;
  text.reserve(size);
  text += head;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0) text += ',';
    text += tasks[i];
    std::string().swap(tasks[i]);
  }
  text += tail;
  return text;
}

}  // namespace cohort::api
