// AVX2 streaming read. Compiled with AVX2 flags (see engine/CMakeLists.txt).
#include <immintrin.h>

#include "engine/backend/cpu/kernels/stream_read.h"
#include "engine/backend/cpu/kernels/tuning_avx2.h"

namespace inferscope::simd {

uint64_t avx2_stream_read(const uint64_t* words, size_t count) {
    __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    size_t i = 0;
    for (; i + 16 <= count; i += 16) {  // 128 bytes per iteration, two cache lines
        const char* ahead = reinterpret_cast<const char*>(words + i) + avx2_tuning::kStreamReadPrefetchBytes;
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + 64, _MM_HINT_T0);
        acc0 = _mm256_add_epi64(acc0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i)));
        acc1 = _mm256_add_epi64(acc1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i + 4)));
        acc2 = _mm256_add_epi64(acc2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i + 8)));
        acc3 = _mm256_add_epi64(acc3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i + 12)));
    }
    const __m256i sum = _mm256_add_epi64(_mm256_add_epi64(acc0, acc1), _mm256_add_epi64(acc2, acc3));
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
    uint64_t total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; i < count; ++i) total += words[i];
    return total;
}

}  // namespace inferscope::simd
