// AVX-512 streaming read. Compiled with AVX-512 flags (see engine/CMakeLists.txt).
#include <immintrin.h>

#include "engine/backend/cpu/kernels/stream_read.h"
#include "engine/backend/cpu/kernels/tuning_avx512.h"

namespace inferscope::simd {

uint64_t avx512_stream_read(const uint64_t* words, size_t count) {
    __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    size_t i = 0;
    // Software prefetch kStreamReadPrefetchBytes ahead (tuning_avx512.h).
    for (; i + 32 <= count; i += 32) {  // 256 bytes per iteration, four cache lines
        const char* ahead = reinterpret_cast<const char*>(words + i) + avx512_tuning::kStreamReadPrefetchBytes;
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + 64, _MM_HINT_T0);
        _mm_prefetch(ahead + 128, _MM_HINT_T0);
        _mm_prefetch(ahead + 192, _MM_HINT_T0);
        acc0 = _mm512_add_epi64(acc0, _mm512_loadu_si512(words + i));
        acc1 = _mm512_add_epi64(acc1, _mm512_loadu_si512(words + i + 8));
        acc2 = _mm512_add_epi64(acc2, _mm512_loadu_si512(words + i + 16));
        acc3 = _mm512_add_epi64(acc3, _mm512_loadu_si512(words + i + 24));
    }
    uint64_t total = static_cast<uint64_t>(
        _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(acc0, acc1), _mm512_add_epi64(acc2, acc3))));
    for (; i < count; ++i) total += words[i];
    return total;
}

}  // namespace inferscope::simd
