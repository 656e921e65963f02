#include "master/teams.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>

#include "common/strings.h"
#include "master/accounts.h"

namespace cohort::master {

Teams::Teams(state::StateStore& store, const JobBook& jobs, Secrets& secrets, SchedulingLoop& loop)
    : store_(store), jobs_(jobs), secrets_(secrets), loop_(loop) {}

Status Teams::Load() {
  COHORT_ASSIGN_OR_RETURN(teams_, store_.LoadTeams());
  loop_.cluster().SetTeams(teams_);
  return Status::Ok();
}

bool Teams::Exists(std::string_view team) const {
  return team == kDefaultTeam || std::any_of(teams_.begin(), teams_.end(),
                                             [&](const TeamQuota& t) { return t.name == team; });
}

StatusOr<TeamQuota> Teams::Set(TeamQuota team) {
  std::vector<std::string> problems;
  if (Status name = ValidateTeamName(team.name, "name"); !name.ok()) {
    problems.push_back(name.message());
  }
  if (team.guaranteed_gpus < 0) {
    problems.push_back(fmt::format("gpus: {} is negative", team.guaranteed_gpus));
  }
  if (team.max_gpus && *team.max_gpus < team.guaranteed_gpus) {
    problems.push_back(fmt::format("max_gpus: {} is below the guarantee of {} GPUs", *team.max_gpus,
                                   team.guaranteed_gpus));
  }
  if (!problems.empty()) return Status::InvalidArgument("invalid team", std::move(problems));
  COHORT_RETURN_IF_ERROR(store_.SaveTeam(team));
  auto it = std::find_if(teams_.begin(), teams_.end(),
                         [&](const TeamQuota& t) { return t.name == team.name; });
  if (it == teams_.end()) {
    teams_.push_back(team);
    std::sort(teams_.begin(), teams_.end(),
              [](const TeamQuota& a, const TeamQuota& b) { return a.name < b.name; });
  } else {
    *it = team;
  }
  loop_.cluster().SetTeams(teams_);
  spdlog::info("team {}: {} guaranteed GPUs, {}", team.name, team.guaranteed_gpus,
               team.max_gpus ? fmt::format("at most {}", *team.max_gpus) : "no limit");
  loop_.InvalidateResidue();
  return team;
}

Status Teams::Delete(const std::string& name) {
  auto it = std::find_if(teams_.begin(), teams_.end(),
                         [&](const TeamQuota& t) { return t.name == name; });
  if (it == teams_.end()) return Status::NotFound(fmt::format("team {} does not exist", name));
  int live = jobs_.LiveJobsOf(name);
  if (live > 0) {
    return Status::FailedPrecondition(
        fmt::format("team {} has {} job{} that {} not ended; kill or wait for them first", name,
                    live, live == 1 ? "" : "s", live == 1 ? "has" : "have"));
  }
  // A team created again under this name must not find the old team's secrets.
  COHORT_RETURN_IF_ERROR(secrets_.DeleteAll(SecretScope::kTeam, name));
  COHORT_RETURN_IF_ERROR(store_.DeleteTeam(name));
  teams_.erase(it);
  loop_.cluster().SetTeams(teams_);
  loop_.InvalidateResidue();
  return Status::Ok();
}

std::vector<TeamStatus> Teams::List() const {
  std::map<std::string, TeamStatus> by_name;
  by_name[kDefaultTeam] = TeamStatus{TeamQuota{kDefaultTeam, 0, std::nullopt}, true, {}, 0, 0};
  for (const auto& t : teams_) by_name[t.name] = TeamStatus{t, false, {}, 0, 0};
  for (JobId id : jobs_.pending()) {
    const Job& job = jobs_.At(id);
    auto it = by_name.find(job.spec.team);
    if (it != by_name.end()) ++it->second.pending_jobs;
  }
  for (JobId id : jobs_.active()) {
    const Job& job = jobs_.At(id);
    auto it = by_name.find(job.spec.team);
    if (it == by_name.end()) continue;
    ++it->second.running_jobs;
    for (const auto& t : job.tasks) {
      if (!IsTerminal(t.state)) it->second.held += t.resources;
    }
  }
  std::vector<TeamStatus> out;
  for (auto& [name, status] : by_name) out.push_back(std::move(status));
  return out;
}

}  // namespace cohort::master
