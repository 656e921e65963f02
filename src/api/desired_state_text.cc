#include "api/desired_state_text.h"

#include <vector>

#include "api/request_params.h"
#include "model/json.h"

namespace cohort::api {

std::string DesiredStateText(const DesiredState& desired) {
  // Keys in the order nlohmann's map writes them: forget, tasks, version.
  Json forget = Json::array();
  for (const auto& id : desired.forget) forget.push_back(ToJson(id));
  std::string head = "{\"forget\":" + JsonText(forget) + ",\"tasks\":[";
  std::string tail = "],\"version\":" + std::to_string(desired.version) + "}";
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
