#include "apex_param_sync.h"

#include <algorithm>

namespace proteus {

ApexParamSync::ApexParamSync(const std::vector<bool>& needs_gather) {
  status_.reserve(needs_gather.size());
  for (const bool gather : needs_gather) status_.push_back(gather ? Status::Sharded : Status::Ready);
}

// _finish_bucket_param_sync: the main stream waits for what is in flight.
void ApexParamSync::finish(std::vector<ApexSyncStep>* steps) {
  ApexSyncStep wait{ApexSyncStep::kWait, {}};
  for (size_t g = 0; g < status_.size(); ++g) {
    if (status_[g] != Status::Syncing) continue;
    status_[g] = Status::Ready;
    wait.groups.push_back(static_cast<int>(g));
  }
  if (!wait.groups.empty()) steps->push_back(std::move(wait));
}

// _start_bucket_param_sync: finish first, then gather the groups still SHARDED.
void ApexParamSync::start(const std::vector<int>& groups, std::vector<ApexSyncStep>* steps) {
  finish(steps);
  ApexSyncStep launch{ApexSyncStep::kLaunch, {}};
  for (const int g : groups) {
    if (status_[static_cast<size_t>(g)] != Status::Sharded) continue;
    status_[static_cast<size_t>(g)] = Status::Syncing;
    launch.groups.push_back(g);
  }
  if (!launch.groups.empty()) steps->push_back(std::move(launch));
}

std::vector<ApexSyncStep> ApexParamSync::pre_forward(int group) {
  std::vector<ApexSyncStep> steps;
  // _param_copy(param): its group gathered and waited for unless READY.
  if (status_[static_cast<size_t>(group)] != Status::Ready) {
    start({group}, &steps);
    finish(&steps);
  }
  // _try_start_bucket_param_sync(): the next SHARDED group, when nothing is in flight.
  if (std::any_of(status_.begin(), status_.end(), [](Status s) { return s == Status::Syncing; }))
    return steps;
  const auto next = std::find(status_.begin(), status_.end(), Status::Sharded);
  if (next != status_.end()) start({static_cast<int>(next - status_.begin())}, &steps);
  return steps;
}

std::vector<ApexSyncStep> ApexParamSync::sync(const std::vector<int>& groups) {
  std::vector<ApexSyncStep> steps;
  // _try_start_bucket_param_sync(params) starts only if one of them is SHARDED.
  const bool any_sharded = std::any_of(groups.begin(), groups.end(), [&](int g) {
    return status_[static_cast<size_t>(g)] == Status::Sharded;
  });
  if (any_sharded) start(groups, &steps);
  return steps;
}

bool ApexParamSync::all_ready() const {
  return std::all_of(status_.begin(), status_.end(), [](Status s) { return s == Status::Ready; });
}

}  // namespace proteus
