#pragma once
// The compute shaders of gpu/shaders/*.comp as SPIR-V, compiled by glslc at build time and
// embedded in the binary (see gpu/CMakeLists.txt).
#include <cstdint>
#include <span>
#include <string_view>

namespace inferscope::gpu {

// The SPIR-V words of shader `name` ("matmul" for shaders/matmul.comp); Error if unknown.
std::span<const uint32_t> shader_spirv(std::string_view name);

}  // namespace inferscope::gpu
