#include "json_text.h"

#include <set>
#include <vector>
#include "limits.h"

namespace proteus::config_detail {

namespace {

struct LineColumn {
  int64_t line = 1, column = 1;
};

LineColumn line_column(const std::string& text, size_t offset) {
  LineColumn at;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
  }
  return at;
}

std::string where(const std::string& text, size_t offset) {
  LineColumn at = line_column(text, offset);
  return "line " + std::to_string(at.line) + ", column " + std::to_string(at.column);
}

// Rejects nesting deeper than kMaxDepth before the parser sees the text, so that no later
// stage (parsing, copying, destroying a JSON value) can recurse without bound.
void check_depth(const std::string& text, const std::string& what) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > config_limits::kMaxDepth) {
        throw Error("invalid_json", "",
                    what + " nests arrays/objects more than " + std::to_string(config_limits::kMaxDepth) +
                        " levels deep (at " + where(text, i) + ")");
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

// Parser callback state: one frame per open object/array, to detect duplicate keys and name
// their path.
struct Frame {
  bool object = false;
  std::set<std::string> keys;
  std::string key;
  int64_t index = -1;
};

std::string frame_path(const std::vector<Frame>& frames, const std::string& last_key) {
  std::string path;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    const Frame& frame = frames[i];
    path = frame.object ? join_path(path, frame.key) : index_path(path, static_cast<size_t>(frame.index));
  }
  return join_path(path, last_key);
}

std::string strip_nlohmann_prefix(const std::string& message) {
  // "[json.exception.parse_error.101] parse error at line 1, column 10: syntax error ..."
  size_t column = message.find("column ");
  if (column != std::string::npos) {
    size_t colon = message.find(": ", column);
    if (colon != std::string::npos) return message.substr(colon + 2);
  }
  size_t bracket = message.find("] ");
  return bracket == std::string::npos ? message : message.substr(bracket + 2);
}

}  // namespace

Json parse_json_text(const std::string& text, const std::string& what) {
  if (static_cast<int64_t>(text.size()) > config_limits::kMaxInputBytes) {
    throw Error("invalid_json", "",
                what + " is " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(config_limits::kMaxInputBytes) + " bytes (16 MiB)");
  }
  check_depth(text, what);
  std::vector<Frame> frames;
  auto callback = [&frames](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (!frames.empty() && !frames.back().object) ++frames.back().index;
        frames.push_back(Frame{event == Json::parse_event_t::object_start, {}, {}, -1});
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case Json::parse_event_t::key: {
        Frame& frame = frames.back();
        frame.key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.key).second) {
          std::string path = frame_path(frames, frame.key);
          throw Error("invalid_json", path, "duplicate key \"" + frame.key + "\" in the same object");
        }
        break;
      }
      case Json::parse_event_t::value:
        if (!frames.empty() && !frames.back().object) ++frames.back().index;
        break;
    }
    return true;
  };
  try {
    return Json::parse(text, callback);
  } catch (const Json::parse_error& error) {
    size_t offset = error.byte > 0 ? error.byte - 1 : 0;
    throw Error("invalid_json", "",
                what + " is not valid JSON: at " + where(text, offset) + ": " + strip_nlohmann_prefix(error.what()));
  } catch (const Json::exception& error) {
    throw Error("invalid_json", "", what + " is not valid JSON: " + strip_nlohmann_prefix(error.what()));
  }
}

}  // namespace proteus::config_detail
