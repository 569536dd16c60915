// The importers behind one entry point for the CLI and the page: the kind of text is named or
// recognised, the result carries the config with what was ignored and assumed.
#include <nlohmann/json.hpp>

#include "../config/json_text.h"
#include "../config/limits.h"
#include "proteus/api.h"
#include "proteus/import.h"

namespace proteus {

namespace {

// "json" (a Proteus config), "hf" (a config.json with "architectures") or "megatron".
std::string recognise(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw Error("invalid_request", "", "the text is empty");
  if (text[first] != '{') return "megatron";
  const auto j = config_detail::parse_json_text(text, "the pasted text");
  if (j.is_object() && j.contains("architectures")) return "hf";
  return "json";
}

}  // namespace

std::string import_json(const std::string& kind_in, const std::string& text,
                        const std::string& options_json) {
  if (static_cast<int64_t>(text.size()) > config_limits::kMaxInputBytes) {
    throw Error("invalid_json", "",
                "the text is " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(config_limits::kMaxInputBytes) + " bytes (16 MiB)");
  }
  std::string kind = kind_in;
  if (kind == "auto") kind = recognise(text);
  nlohmann::ordered_json out;
  out["ok"] = true;
  out["kind"] = kind;
  ImportResult r;
  if (kind == "megatron") {
    MegatronImportOptions options;
    if (!options_json.empty()) {
      const auto o = config_detail::parse_json_text(options_json, "the import options");
      if (o.contains("cluster"))
        options.cluster_json =
            o["cluster"].is_string() ? o["cluster"].get<std::string>() : o["cluster"].dump();
      if (o.contains("nodes")) {
        if (!o["nodes"].is_number_integer() || o["nodes"].get<int64_t>() < 1 ||
            o["nodes"].get<int64_t>() > 131072)
          throw Error("invalid_request", "nodes", "nodes must be an integer in 1..131072");
        options.nodes = o["nodes"].get<int>();
      }
    }
    r = import_megatron(text, options);
  } else if (kind == "hf") {
    r = import_hf(text);
  } else if (kind == "json") {
    r.config_json = text;
  } else {
    throw Error("invalid_request", "kind", "import kind must be megatron, hf or auto, not '" + kind + "'");
  }
  out["config"] = nlohmann::ordered_json::parse(r.config_json);
  out["ignored"] = r.ignored;
  out["assumed"] = r.assumed;
  return out.dump(2);
}

long long max_input_bytes() { return config_limits::kMaxInputBytes; }

std::string export_megatron_text(const std::string& config_text) { return export_megatron(config_text); }

}  // namespace proteus
