// Apex's DistributedFusedAdam as NeMo runs it (strategy.distributed_optimizer "apex";
// core/src/compile/apex_param_sync.h; docs/frameworks/data-parallelism.md, "Apex's
// DistributedFusedAdam"): a bucket group per transformer layer (per model chunk under the
// interleaved schedule), the other parameters in the first one; after the step its pre-forward
// hooks gather one group at a time, each launched as the previous group's first parameter is read,
// after the compute queued so far; Megatron-Core's interleaved schedule calls param_sync_func for
// chunks 0 and 1 first, then for chunk c + 1 at the forward whose k + pipeline rank is chunk c's
// first micro-batch.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../core/src/compile/apex_param_sync.h"
#include "../core/src/compile/grad_sync_points.h"
#include "compile_fixtures.h"
#include "error_path.h"
#include "proteus/api.h"
#include "proteus/config.h"
#include "proteus/import.h"
#include "proteus/schedule.h"
#include "proteus/search.h"

using json = nlohmann::json;
using namespace proteus;

namespace {

using Steps = std::vector<ApexSyncStep>;

bool is(const Steps& steps, const std::vector<std::pair<ApexSyncStep::Kind, std::vector<int>>>& want) {
  if (steps.size() != want.size()) return false;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].kind != want[i].first || steps[i].groups != want[i].second) return false;
  return true;
}

constexpr auto kWait = ApexSyncStep::kWait;
constexpr auto kLaunch = ApexSyncStep::kLaunch;

struct Event {
  std::string name;
  double start_s, end_s;
};

// Rank 0's parameter gathers and its first micro-batch's forward compute, in time order.
void first_forward(const std::string& cfg, std::vector<Event>* gathers, std::vector<Event>* forward) {
  SimulateOptions options;
  options.timeline = true;
  const json out = json::parse(simulate_json(cfg, options));
  REQUIRE(out["ok"] == true);
  for (const json& e : out["timeline"]) {
    if (e["rank"].get<int>() != 0) continue;
    const Event ev{e["name"].get<std::string>(), e["start_s"].get<double>(), e["end_s"].get<double>()};
    if (ev.name.rfind("param_gather_", 0) == 0) gathers->push_back(ev);
    if (e["stream"] == "compute" && e["kind"] == "forward" && e["mb"].get<int>() == 0) forward->push_back(ev);
  }
  const auto by_start = [](const Event& a, const Event& b) { return a.start_s < b.start_s; };
  std::sort(gathers->begin(), gathers->end(), by_start);
  std::sort(forward->begin(), forward->end(), by_start);
}

// 4 layers on two DGX H100 nodes, dp 2 across them: the gathers cross InfiniBand.
std::string flat_config(const std::string& extra) {
  return test::config_json(test::gpt_model(4, 2048, 16, 2048, 1024), R"({"preset":"dgx-h100","nodes":2})", 8,
                           R"({"tp":8,"pp":1,"dp":2,"micro_batch":1,"zero":1,"sequence_parallel":true,)"
                           R"("overlap_grad_reduce":true,"overlap_param_gather":true)" +
                               extra + "}");
}

// Where layer `layer`'s forward starts (its first op).
double layer_start_s(const std::vector<Event>& forward, int layer) {
  const std::string prefix = "layers." + std::to_string(layer) + ".";
  for (const Event& e : forward)
    if (e.name.rfind(prefix, 0) == 0) return e.start_s;
  FAIL("no forward op of layer " << layer);
  return 0;
}

}  // namespace

TEST_CASE("apex param sync: the hooks keep one group in flight, launched as the previous one is read") {
  ApexParamSync sync({true, true, true, true});
  // The first parameter read: its group is gathered and waited for, then the next one launched.
  CHECK(is(sync.pre_forward(0), {{kLaunch, {0}}, {kWait, {0}}, {kLaunch, {1}}}));
  // Group 0's other parameters: READY, and group 1 is in flight, so nothing.
  CHECK(sync.pre_forward(0).empty());
  CHECK(is(sync.pre_forward(1), {{kWait, {1}}, {kLaunch, {2}}}));
  CHECK(is(sync.pre_forward(2), {{kWait, {2}}, {kLaunch, {3}}}));
  CHECK_FALSE(sync.all_ready());
  CHECK(is(sync.pre_forward(3), {{kWait, {3}}}));
  CHECK(sync.all_ready());
  CHECK(sync.pre_forward(1).empty());  // the next micro-batches: nothing left to gather
}

TEST_CASE("apex param sync: param_sync_func finishes what is in flight before it launches") {
  ApexParamSync sync({true, true, true, false});  // group 3 has nothing to gather
  // Megatron-Core's "Synchronize params for first two model chunks": the second call's
  // _start_bucket_param_sync first waits for the first chunk's gather.
  CHECK(is(sync.sync({0}), {{kLaunch, {0}}}));
  CHECK(is(sync.sync({1}), {{kWait, {0}}, {kLaunch, {1}}}));
  // Chunk 0's forward: READY; chunk 1 in flight, so the hook launches nothing.
  CHECK(sync.pre_forward(0).empty());
  CHECK(is(sync.sync({2}), {{kWait, {1}}, {kLaunch, {2}}}));
  CHECK(sync.sync({2}).empty());  // launched already: _try_start_bucket_param_sync does nothing
  CHECK(sync.pre_forward(1).empty());
  CHECK(is(sync.pre_forward(2), {{kWait, {2}}}));  // group 3 is READY from the start
  CHECK(sync.all_ready());
}

TEST_CASE("apex param sync: the interleaved schedule launches chunk c + 1 at forward c p - stage") {
  // 4 stages, 8 micro-batches. Forward k runs chunk (k mod 4v) / 4; param_sync_func runs before
  // forward k for chunk (k + stage) / 4 + 1 when k + stage is a multiple of 4 below 4v.
  for (const int v : {2, 3, 4}) {
    for (int stage = 0; stage < 4; ++stage) {
      CAPTURE(v);
      CAPTURE(stage);
      const std::vector<Pass> order = stage_schedule(Schedule::Interleaved1F1B, 4, 8, v, stage);
      const std::vector<int> launched = megatron_param_sync_chunks(order, stage, 4);
      REQUIRE(launched.size() == order.size());
      std::map<int, int> forward_of_chunk;  // chunk -> forward index k before which it is launched
      int k = 0;
      for (size_t i = 0; i < order.size(); ++i) {
        if (launched[i] >= 0) {
          REQUIRE(order[i].kind == PassKind::F);
          forward_of_chunk[launched[i]] = k;
        }
        if (order[i].kind == PassKind::F) ++k;
      }
      CHECK(forward_of_chunk.size() == static_cast<size_t>(v - 2));  // chunks 0 and 1 go first
      for (int c = 2; c < v; ++c) CHECK(forward_of_chunk.at(c) == 4 * (c - 1) - stage);
    }
  }
}

TEST_CASE("apex param sync: a group per layer, gathered one at a time as the forward reaches the previous") {
  std::vector<Event> gathers, forward;
  first_forward(flat_config(R"(,"distributed_optimizer":"apex")"), &gathers, &forward);
  // One group per layer; the embedding, final norm and output layer ride with layer 0's.
  REQUIRE(gathers.size() == 4);
  REQUIRE_FALSE(forward.empty());
  // Nothing runs before the first group is there: the embedding's hook waits for it.
  CHECK(forward.front().start_s >= gathers[0].end_s - 1e-12);
  for (size_t k = 1; k < gathers.size(); ++k) {
    CAPTURE(k);
    CHECK(gathers[k].start_s >= gathers[k - 1].end_s - 1e-12);  // one in flight at a time
    // Layer k's gather is launched by layer k - 1's first hook (layer 1's by the embedding's,
    // which shares layer 0's group), after the compute queued before it; layer k waits for it.
    if (k >= 2) CHECK(gathers[k].start_s >= layer_start_s(forward, static_cast<int>(k) - 1) - 1e-12);
    CHECK(layer_start_s(forward, static_cast<int>(k)) >= gathers[k].end_s - 1e-12);
  }
  // Megatron-Core's distributed optimizer (Proteus's model of it) issues its buckets back to back
  // from the start: its last gather starts before layer 1's forward.
  std::vector<Event> mcore_gathers, mcore_forward;
  first_forward(flat_config(R"(,"grad_bucket_MB":64)"), &mcore_gathers, &mcore_forward);
  REQUIRE(mcore_gathers.size() >= 2);
  CHECK(mcore_gathers.back().start_s < layer_start_s(mcore_forward, 1));
}

TEST_CASE(
    "apex param sync: under the interleaved schedule the first chunk's gather runs before any compute") {
  const std::string cfg =
      test::config_json(test::gpt_model(8, 2048, 16, 2048, 1024), R"({"preset":"dgx-h100","nodes":2})", 16,
                        R"({"tp":4,"pp":2,"dp":2,"micro_batch":1,"zero":1,"sequence_parallel":true,)"
                        R"("schedule":"interleaved-1f1b","virtual_stages":2,"overlap_grad_reduce":true,)"
                        R"("overlap_param_gather":true,"distributed_optimizer":"apex"})");
  std::vector<Event> gathers, forward;
  first_forward(cfg, &gathers, &forward);
  REQUIRE(gathers.size() == 2);  // a group per model chunk
  // param_sync_func[1] first waits for chunk 0's gather (Apex's _start_bucket_param_sync).
  CHECK(forward.front().start_s >= gathers[0].end_s - 1e-12);
  CHECK(gathers[1].start_s >= gathers[0].end_s - 1e-12);
}

TEST_CASE("apex param sync: refused where Apex's optimizer is not what runs, named in the config") {
  const auto error_for = [](const std::string& strategy) {
    const std::string cfg = test::config_json(test::gpt_model(8, 1024, 16, 1024, 1024),
                                              R"({"preset":"dgx-h100","nodes":1})", 16, strategy);
    return test::error_path([&] { parse_config(cfg); });
  };
  CHECK(error_for(R"({"tp":1,"pp":1,"dp":8,"micro_batch":1,"zero":0,"distributed_optimizer":"apex"})") ==
        "strategy.distributed_optimizer");
  CHECK(error_for(R"({"tp":1,"pp":1,"dp":8,"micro_batch":1,"zero":3,"distributed_optimizer":"apex"})") ==
        "strategy.distributed_optimizer");
  CHECK(error_for(R"({"tp":1,"pp":1,"dp":8,"micro_batch":1,"zero":1,"framework":"deepspeed",)"
                  R"("distributed_optimizer":"apex"})") == "strategy.distributed_optimizer");
  CHECK(error_for(R"({"tp":1,"pp":1,"dp":8,"micro_batch":1,"zero":1,"distributed_optimizer":"nemo"})") ==
        "strategy.distributed_optimizer");
}

TEST_CASE("apex param sync: the field round-trips, export says Megatron-LM runs its own, a search keeps it") {
  const std::string cfg =
      test::config_json(test::gpt_model(8, 1024, 16, 1024, 1024), R"({"preset":"dgx-h100","nodes":1})", 16,
                        R"({"tp":1,"pp":2,"dp":4,"micro_batch":1,"zero":1,"distributed_optimizer":"apex"})");
  const Config c = parse_config(cfg);
  CHECK(c.strategy.distributed_optimizer == DistributedOptimizer::Apex);
  CHECK(parse_config(config_to_json(c)).strategy.distributed_optimizer == DistributedOptimizer::Apex);
  const std::string exported = export_megatron(cfg);
  CHECK(exported.find("# distributed_optimizer apex") != std::string::npos);
  CHECK(exported.find("--use-distributed-optimizer") != std::string::npos);
  // The space's candidates at other ZeRO stages drop the field instead of being refused for it.
  int apex = 0, others = 0;
  for (const StrategySpec& s : enumerate_space(c)) {
    if (s.zero == 1 && s.framework == Framework::Megatron) {
      ++apex;
      CHECK(s.distributed_optimizer == DistributedOptimizer::Apex);
    } else {
      ++others;
      CHECK(s.distributed_optimizer == DistributedOptimizer::Megatron);
    }
  }
  CHECK(apex > 0);
  CHECK(others > 0);
}
