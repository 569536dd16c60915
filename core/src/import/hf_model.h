// The Hugging Face config.json reader's result: the model object plus what was not applied.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace proteus::import_detail {

struct HfModel {
  nlohmann::ordered_json model;
  nlohmann::ordered_json strategy = nlohmann::ordered_json::object();  // what config.json says of the run
  std::vector<std::string> ignored, assumed;
};

HfModel read_hf_model(const std::string& text);

}  // namespace proteus::import_detail
