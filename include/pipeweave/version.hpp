#pragma once
#define PIPEWEAVE_VERSION_MAJOR 0
#define PIPEWEAVE_VERSION_MINOR 1
#define PIPEWEAVE_VERSION_PATCH 0
namespace pipeweave {
inline constexpr const char* kVersion = "0.1.0";
}
