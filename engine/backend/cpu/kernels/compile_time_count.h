#pragma once
// Calls f(std::integral_constant<int, count>()) for a run-time count in [1, Max] (a larger
// count runs as Max, a smaller one as 1). Kernels whose register-held accumulators are sized
// by a count (query heads, vector chunks) need it at compile time, or GCC keeps the
// accumulators on the stack. Header-only and instantiated with each kernel file's own
// lambdas, so every instruction-set family gets its own copy.
#include <type_traits>

namespace inferscope::simd {

template <int Max, class F>
inline void with_compile_time_count(int count, F&& f) {
    static_assert(Max >= 1);
    if constexpr (Max > 1) {
        if (count < Max) return with_compile_time_count<Max - 1>(count, f);
    }
    f(std::integral_constant<int, Max>());
}

}  // namespace inferscope::simd
