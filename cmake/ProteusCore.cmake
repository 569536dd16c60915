# The simulator core as a static library, shared by the top-level project (CLI, tests, page
# module) and by bench/ when it is configured as a project of its own (the WebAssembly
# benchmark). Include after project(); PROTEUS_ROOT is the repository root and
# PROTEUS_VERSION_TEXT the version string.

# nlohmann_json: header-only. Under Emscripten the system include dir must not be added (it
# pulls glibc headers into the wasm sysroot), so we point at a folder holding only it.
if(EMSCRIPTEN)
  set(PROTEUS_JSON_INCLUDE ${CMAKE_BINARY_DIR}/json-include)
  file(MAKE_DIRECTORY ${PROTEUS_JSON_INCLUDE})
  if(NOT EXISTS ${PROTEUS_JSON_INCLUDE}/nlohmann)
    file(CREATE_LINK /usr/include/nlohmann ${PROTEUS_JSON_INCLUDE}/nlohmann SYMBOLIC)
  endif()
  # Exceptions carry proteus::Error to the bindings. WebAssembly's own exception handling
  # (Node >= 17, Chrome >= 95): Emscripten's default JavaScript-based handling routes every
  # call that may unwind through a JavaScript trampoline and ran the simulator ~3x slower
  # (docs/performance.md). OFF only to measure exactly that.
  option(PROTEUS_WASM_NATIVE_EH "Use WebAssembly exception handling (-fwasm-exceptions)" ON)
  if(PROTEUS_WASM_NATIVE_EH)
    set(PROTEUS_EH_FLAG -fwasm-exceptions)
  else()
    set(PROTEUS_EH_FLAG -fexceptions)
  endif()
  add_compile_options(${PROTEUS_EH_FLAG})
  add_link_options(${PROTEUS_EH_FLAG})
else()
  find_path(PROTEUS_JSON_INCLUDE nlohmann/json.hpp REQUIRED)
endif()

# Presets: every JSON under core/presets is embedded into the binary.
file(GLOB PROTEUS_PRESET_FILES CONFIGURE_DEPENDS
  ${PROTEUS_ROOT}/core/presets/models/*.json
  ${PROTEUS_ROOT}/core/presets/clusters/*.json
  ${PROTEUS_ROOT}/core/presets/scenarios/*.json)
set(PROTEUS_PRESETS_CPP ${CMAKE_BINARY_DIR}/generated/embedded_presets.cpp)
add_custom_command(
  OUTPUT ${PROTEUS_PRESETS_CPP}
  COMMAND ${CMAKE_COMMAND} -DOUT=${PROTEUS_PRESETS_CPP} -DROOT=${PROTEUS_ROOT}/core/presets
          -P ${PROTEUS_ROOT}/core/presets/embed_presets.cmake
  DEPENDS ${PROTEUS_PRESET_FILES} ${PROTEUS_ROOT}/core/presets/embed_presets.cmake
  COMMENT "Embedding presets")

file(GLOB_RECURSE PROTEUS_CORE_SOURCES CONFIGURE_DEPENDS ${PROTEUS_ROOT}/core/src/*.cpp)
add_library(proteus_core STATIC ${PROTEUS_CORE_SOURCES} ${PROTEUS_PRESETS_CPP})
target_include_directories(proteus_core PUBLIC ${PROTEUS_ROOT}/core/include)
target_include_directories(proteus_core SYSTEM PRIVATE ${PROTEUS_JSON_INCLUDE})
target_compile_definitions(proteus_core PUBLIC PROTEUS_VERSION="${PROTEUS_VERSION_TEXT}")
if(NOT MSVC)
  target_compile_options(proteus_core PRIVATE -Wall -Wextra)
endif()
