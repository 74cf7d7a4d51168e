#pragma once
// Unaligned little-endian reads and writes of block fields (scales, packed bits) for the
// SIMD kernel files. Include it only from *_avx2.cpp / *_avx512.cpp files: everything is in an
// anonymous namespace, one copy per instruction-set family (engine/CMakeLists.txt).
#include <cstdint>
#include <cstring>

namespace inferscope::simd {
namespace {

template <typename T>
inline T load_unaligned(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
inline uint16_t load_u16(const uint8_t* p) { return load_unaligned<uint16_t>(p); }
inline uint32_t load_u32(const uint8_t* p) { return load_unaligned<uint32_t>(p); }
inline int32_t load_i32(const uint8_t* p) { return load_unaligned<int32_t>(p); }
inline float load_f32(const uint8_t* p) { return load_unaligned<float>(p); }
inline void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof(v)); }

}  // namespace
}  // namespace inferscope::simd
