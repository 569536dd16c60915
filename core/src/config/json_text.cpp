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
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
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

// The path of the innermost open object or array.
std::string container_path(const std::vector<Frame>& frames) {
  std::string path;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    const Frame& frame = frames[i];
    path = frame.object ? join_path(path, frame.key) : index_path(path, static_cast<size_t>(frame.index));
  }
  return path;
}

// The path of the value the parser is reading when it stops: the last key of the innermost
// object, or the next element of the innermost array.
std::string pending_value_path(const std::vector<Frame>& frames) {
  if (frames.empty()) return "";
  const Frame& last = frames.back();
  if (last.object) return frame_path(frames, last.key);
  return index_path(container_path(frames), static_cast<size_t>(last.index + 1));
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

// SAX handler that follows the parse with one frame per open object/array: rejects duplicate
// and over-long keys with their path, and keeps the path of the value being read for errors.
// A syntax error or a number beyond double's range is rethrown as nlohmann's exception.
struct KeyChecker {
  std::vector<Frame> frames;

  int64_t values = 0, containers = 0;
  bool value() {
    if (++values > config_limits::kMaxJsonValues) {
      throw Error("invalid_json", container_path(frames),
                  "more than " + std::to_string(config_limits::kMaxJsonValues) +
                      " values in one config; no valid config has nearly as many");
    }
    if (!frames.empty() && !frames.back().object) ++frames.back().index;
    return true;
  }
  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(Json::number_integer_t) { return value(); }
  bool number_unsigned(Json::number_unsigned_t) { return value(); }
  bool number_float(Json::number_float_t, const Json::string_t&) { return value(); }
  bool string(Json::string_t&) { return value(); }
  bool binary(Json::binary_t&) { return value(); }
  bool open(bool object) {
    if (++containers > config_limits::kMaxJsonContainers) {
      throw Error("invalid_json", container_path(frames),
                  "more than " + std::to_string(config_limits::kMaxJsonContainers) +
                      " objects and arrays in one config; no valid config has nearly as many");
    }
    value();
    frames.push_back(Frame{object, {}, {}, -1});
    return true;
  }
  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool close() {
    if (!frames.empty()) frames.pop_back();
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(Json::string_t& key) {
    Frame& frame = frames.back();
    if (static_cast<int64_t>(key.size()) > config_limits::kMaxStringChars) {
      // Not repeated in the message or the path: it may be megabytes long.
      throw Error("invalid_json", container_path(frames),
                  "a key of " + std::to_string(key.size()) +
                      " characters; keys, like all strings, are limited to " +
                      std::to_string(config_limits::kMaxStringChars));
    }
    frame.key = key;
    if (!frame.keys.insert(frame.key).second) {
      throw Error("invalid_json", frame_path(frames, frame.key),
                  "duplicate key \"" + frame.key + "\" in the same object");
    }
    return true;
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& error) {
    throw error;
  }
};

}  // namespace

Json parse_json_text(const std::string& text, const std::string& what) {
  if (static_cast<int64_t>(text.size()) > config_limits::kMaxInputBytes) {
    throw Error("invalid_json", "",
                what + " is " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(config_limits::kMaxInputBytes) + " bytes (16 MiB)");
  }
  check_depth(text, what);
  // Two linear passes: KeyChecker's checks as SAX events, then the plain DOM parse. (nlohmann's
  // parse-with-callback rescans the enclosing array at the end of every object, so an array
  // of millions of {} took minutes.)
  KeyChecker checker;
  try {
    Json::sax_parse(text, &checker);
    return Json::parse(text);
  } catch (const Json::parse_error& error) {
    size_t offset = error.byte > 0 ? error.byte - 1 : 0;
    throw Error(
        "invalid_json", "",
        what + " is not valid JSON: at " + where(text, offset) + ": " + strip_nlohmann_prefix(error.what()));
  } catch (const Json::out_of_range& error) {
    // A number beyond double's range (1e400): the parser stopped at the value of the last key
    // (or array element) it saw, so that is the field to change.
    throw Error("invalid_json", pending_value_path(checker.frames),
                what + " is not valid JSON: " + strip_nlohmann_prefix(error.what()) +
                    " (JSON numbers here must lie within about +-1.8e308)");
  } catch (const Json::exception& error) {
    throw Error("invalid_json", "", what + " is not valid JSON: " + strip_nlohmann_prefix(error.what()));
  }
}

}  // namespace proteus::config_detail
