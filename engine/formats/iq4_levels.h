#pragma once
// The sixteen levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl), sorted ascending: a 4-bit
// index q stands for d * kIQ4NLValues[q]. Plain data and no C++ library headers, so that the
// instruction-set-specific kernels (*_avx2.cpp, *_avx512.cpp) can load it as a byte-shuffle
// table.
#include <stdint.h>

namespace inferscope {

alignas(16) inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                        1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace inferscope
