#include "engine/backend/cpu/kernels/stream_read.h"

#include "engine/backend/cpu/kernels/family_chain.h"

namespace inferscope {
namespace {

// Eight independent accumulators keep the loop limited by loads, not by one addition chain.
uint64_t scalar_stream_read(const uint64_t* words, size_t count) {
    uint64_t acc[8] = {};
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        for (size_t j = 0; j < 8; ++j) acc[j] += words[i + j];
    }
    for (; i < count; ++i) acc[0] += words[i];
    uint64_t total = 0;
    for (uint64_t a : acc) total += a;
    return total;
}

// A family's own read loop; null for families that share the one below theirs.
StreamReadFn family_stream_read(CpuIsa isa) {
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
        case CpuIsa::Avx512: return &simd::avx512_stream_read;
        case CpuIsa::Avx2: return &simd::avx2_stream_read;
#elif defined(__aarch64__)
        case CpuIsa::Neon: return &simd::neon_stream_read;
#endif
        case CpuIsa::Scalar: return &scalar_stream_read;
        default: return nullptr;
    }
}

}  // namespace

StreamReadFn stream_read_kernel(CpuIsa isa) { return first_provided_kernel(isa, family_stream_read); }

}  // namespace inferscope
