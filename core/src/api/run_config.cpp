// run.h: compile and execute a config; a profiled zero-bubble schedule is played twice.
#include "proteus/run.h"

namespace proteus {

bool zb_profiled(const Config& config) {
  return zero_bubble_schedule(config.strategy.schedule) && config.strategy.pp > 1 &&
         config.strategy.zb_plan == ZbPlan::Profiled;
}

ConfigRun run_config(const Config& config, const Topology& topology, const ExecOptions& options) {
  const CostModel cost = cost_model_of(config);
  ConfigRun run;
  run.compiled = compile(config);
  if (!zb_profiled(config)) {
    run.trace = execute(run.compiled.exec, cost, topology, options);
    return run;
  }
  // The timer iterations: the unit-time order, timed.
  ExecOptions timed = options;
  timed.record_memory_curve = false;
  timed.progress = {};
  const Trace first = execute(run.compiled.exec, cost, topology, timed);
  const PassProfile profile = profile_passes(run.compiled.exec, first);
  const PipelineSchedule planned =
      plan_zero_bubble(generated_schedule(config, run.compiled.tree), config.strategy.schedule, profile,
                       schedule_w_memory_fraction(config));
  run.compiled = compile(config, planned);
  run.trace = execute(run.compiled.exec, cost, topology, options);
  run.zb_profile = profile;
  return run;
}

}  // namespace proteus
