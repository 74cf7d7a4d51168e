#pragma once
// IEEE half precision and bfloat16 conversions (bit-exact, round to nearest even).
#include <bit>
#include <cstdint>

namespace inferscope {

inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    uint32_t bits;
    if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int shift = 0;
            while ((mantissa & 0x400u) == 0) {
                mantissa <<= 1;
                ++shift;
            }
            mantissa &= 0x3FFu;
            bits = sign | (static_cast<uint32_t>(127 - 15 - shift + 1) << 23) | (mantissa << 13);
        }
    } else if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
    }
    return std::bit_cast<float>(bits);
}

inline uint16_t fp32_to_fp16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // NaN
    if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow -> inf
    if (abs < 0x38800000u) {  // result is subnormal or zero
        if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
        const uint32_t exponent = abs >> 23;
        const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - exponent;  // 14 + (112 - exponent)
        uint32_t half_mantissa = mantissa >> shift;
        const uint32_t remainder = mantissa & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (remainder > halfway || (remainder == halfway && (half_mantissa & 1u))) ++half_mantissa;
        return static_cast<uint16_t>(sign | half_mantissa);
    }
    uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
    rounded -= (112u << 23);
    return static_cast<uint16_t>(sign | (rounded >> 13));
}

inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7FFFu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

// Rounds a float to the nearest value representable in half precision.
inline float round_to_fp16(float f) { return fp16_to_fp32(fp32_to_fp16(f)); }
inline float round_to_bf16(float f) { return bf16_to_fp32(fp32_to_bf16(f)); }

}  // namespace inferscope
