// F32 to F16 as the CPU's fp32_to_fp16 (engine/core/fp16.h) rounds it: to nearest, ties to even,
// overflow to infinity, F16 subnormals kept. Done on the bits because Vulkan leaves the rounding
// of packHalf2x16 (and whether it keeps subnormals) to the implementation.
#ifndef F16_GLSL
#define F16_GLSL

uint f16_bits(float f) {
    const uint bits = floatBitsToUint(f);
    const uint sign = (bits >> 16) & 0x8000u;
    const uint magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return sign | 0x7E00u;   // NaN
    if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // from 65520 on: infinity
    if (magnitude < 0x33000000u) return sign;             // up to half the smallest subnormal: zero
    if (magnitude < 0x38800000u) {                        // F16 subnormal
        const uint mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
        const uint shift = 126u - (magnitude >> 23);
        uint kept = mantissa >> shift;
        const uint rest = mantissa & ((1u << shift) - 1u);
        const uint halfway = 1u << (shift - 1u);
        if (rest > halfway || (rest == halfway && (kept & 1u) != 0u)) ++kept;
        return sign | kept;
    }
    return sign | ((magnitude + 0xFFFu + ((magnitude >> 13) & 1u) - (112u << 23)) >> 13);
}

// f rounded to the nearest F16 value, as an F32.
float round_to_f16(float f) { return unpackHalf2x16(f16_bits(f)).x; }

#endif
