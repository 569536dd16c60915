// Every model preset, as the config parser resolves it, builds into a valid OpGraph; the
// presets with a released checkpoint have that checkpoint's parameter count.
#include <doctest/doctest.h>

#include <map>

#include "proteus/config.h"
#include "proteus/op_graph.h"
#include "proteus/presets.h"
#include "test_model_helpers.h"

using namespace proteus;
using namespace proteus::test_model;

TEST_CASE("model: every model preset builds a valid graph") {
  // sum(p.numel()) of the HuggingFace / torchvision checkpoints.
  const std::map<std::string, int64_t> released = {
      {"gpt2-small", 124'439'808},     // openai-community/gpt2
      {"llama2-7b", 6'738'415'616},    // meta-llama/Llama-2-7b-hf
      {"llama2-70b", 68'976'648'192},  // meta-llama/Llama-2-70b-hf
      {"llama3-8b", 8'030'261'248},    // meta-llama/Meta-Llama-3-8B
      {"resnet50", 25'557'032},        // torchvision
      {"inception-v3", 27'161'264},    // torchvision, with the auxiliary head
      {"vgg19", 143'667'240},          // torchvision
      {"alexnet", 61'100'840},         // torchvision
  };
  int models = 0;
  for (const Preset& p : embedded_presets()) {
    if (p.kind != PresetKind::Model) continue;
    ++models;
    CAPTURE(p.name);
    const Config c = parse_config("{\"model\": \"" + p.name +
                                  "\", \"cluster\": \"dgx-a100-80g\", \"training\": {\"global_batch\": 8},"
                                  " \"strategy\": {\"dp\": 8}}");
    const OpGraph g = build_op_graph(c.model, c.training, 1);
    CHECK(check_graph(g) == "");
    CHECK(g.num_layers > 0);
    CHECK(g.training_flops() > 0);
    if (auto it = released.find(p.name); it != released.end()) CHECK(g.parameter_count() == it->second);
  }
  CHECK(models > 0);
}
