// libFuzzer target over the importers and the exporter: launch-script or argument text ->
// import_megatron, config.json text -> import_hf, config text -> export_megatron and back. The
// first input byte chooses which (mod 3); the rest is the text. The contract, for any input:
//   * the importer either returns or throws proteus::Error (any other exception, a crash, a
//     sanitizer report or a hang is a finding);
//   * an Error has a known code (invalid_request too: the node count the arguments may not
//     give) and a non-empty message, and is never "internal";
//   * what an importer returns is a config that parse_config reads, or rejects with a known
//     error (the validator checks combinations the importer passes through), never text that
//     is not JSON;
//   * an exported command line, read back by import_megatron, is a config again or a known error.
// Build and run with fuzz/run.sh SECONDS --target fuzz_import.
#include <cstdint>
#include <string>

#include "fuzz_contract.h"
#include "proteus/config.h"
#include "proteus/error.h"
#include "proteus/import.h"

namespace {

using fuzz_contract::finding;

// invalid_request: what the arguments do not say and the caller must (the node count).
void check_error(const proteus::Error& e, const char* stage) {
  fuzz_contract::check_error(e, stage, fuzz_contract::Requests::Allowed);
}

// An importer's output is JSON that parse_config reads, or rejects for a field.
void check_config(const std::string& json, const char* stage) {
  try {
    (void)proteus::parse_config(json);
  } catch (const proteus::Error& e) {
    if (e.code == "invalid_json") finding(std::string(stage) + ": output is not JSON: " + e.what());
    check_error(e, stage);
  }
}

proteus::MegatronImportOptions on_h100() {
  proteus::MegatronImportOptions options;
  options.cluster_json = "dgx-h100";
  return options;
}

void import_megatron(const std::string& text) {
  check_config(proteus::import_megatron(text, on_h100()).config_json, "import megatron");
}

void import_hf(const std::string& text) {
  const std::string model = proteus::import_hf(text).config_json;  // {"model": {...}}
  if (model.size() < 2 || model.front() != '{' || model.back() != '}')
    finding("import hf: output is not a JSON object: " + model.substr(0, 200));
  check_config(model.substr(0, model.size() - 1) +
                   R"(, "cluster": {"preset": "dgx-h100"}, "training": {"global_batch": 8}})",
               "import hf");
}

void export_then_import(const std::string& text) {
  const std::string args = proteus::export_megatron(text);
  try {
    import_megatron(args);
  } catch (const proteus::Error& e) {
    check_error(e, "export, then import");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0:
        import_megatron(text);
        break;
      case 1:
        import_hf(text);
        break;
      default:
        export_then_import(text);
        break;
    }
  } catch (const proteus::Error& e) {
    check_error(e, "import");
  }
  return 0;
}
