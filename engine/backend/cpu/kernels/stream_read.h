#pragma once
// Reads a buffer as fast as the core can issue loads (for the memory-bandwidth test): the
// sum of its 64-bit words, so the reads cannot be optimized away.
#include <cstddef>
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"

namespace inferscope {

using StreamReadFn = uint64_t (*)(const uint64_t* words, size_t count);
StreamReadFn stream_read_kernel(CpuIsa isa);

namespace simd {
uint64_t avx2_stream_read(const uint64_t* words, size_t count);
uint64_t avx512_stream_read(const uint64_t* words, size_t count);
uint64_t neon_stream_read(const uint64_t* words, size_t count);
}  // namespace simd

}  // namespace inferscope
