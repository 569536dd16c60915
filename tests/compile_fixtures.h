// Small configs for compiler and executor tests (JSON text, parsed by the real parser).
#pragma once
#include <string>

#include "proteus/compile.h"
#include "proteus/config.h"

namespace proteus::test {

// A GPT-style model: `layers` layers, hidden h, `heads` heads, seq s, vocab v, with dropout.
inline std::string gpt_model(int layers, int h, int heads, int s, int vocab) {
  return "{\"kind\":\"transformer\",\"name\":\"test-gpt\",\"layers\":" + std::to_string(layers) +
         ",\"hidden\":" + std::to_string(h) + ",\"heads\":" + std::to_string(heads) +
         ",\"ffn_hidden\":" + std::to_string(4 * h) + ",\"seq_len\":" + std::to_string(s) +
         ",\"vocab\":" + std::to_string(vocab) +
         ",\"mlp\":\"gelu\",\"norm\":\"layernorm\",\"tied_embeddings\":true}";
}

inline std::string config_json(const std::string& model, const std::string& cluster, int64_t global_batch,
                               const std::string& strategy, const std::string& extra = "") {
  return "{\"model\":" + model + ",\"cluster\":" + cluster +
         ",\"training\":{\"global_batch\":" + std::to_string(global_batch) +
         ",\"precision\":\"bf16\",\"optimizer\":\"adam\"},\"strategy\":" + strategy + extra + "}";
}

inline CompiledModel compile_text(const std::string& json) { return compile(parse_config(json)); }

}  // namespace proteus::test
