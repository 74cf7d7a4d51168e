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

// Four values rounded as round_to_f16 rounds each one, with vector selects instead of its
// branches: the products of F16 weights round their input with it.
vec4 round4_to_f16(vec4 v) {
    const uvec4 bits = floatBitsToUint(v);
    const uvec4 magnitude = bits & 0x7FFFFFFFu;
    // F16 normals: to nearest even at F32's mantissa bit 13, staying in F32's layout.
    const vec4 normal = uintBitsToFloat((bits + 0xFFFu + ((bits >> 13) & 1u)) & 0xFFFFE000u);
    // F16 subnormals: multiples of 2^-24 (the scalings are exact; roundEven ties to even).
    const vec4 subnormal = roundEven(v * 16777216.0) * (1.0 / 16777216.0);
    const vec4 infinity = uintBitsToFloat((bits & 0x80000000u) | 0x7F800000u);
    vec4 rounded = mix(normal, subnormal, lessThan(magnitude, uvec4(0x38800000u)));
    rounded = mix(rounded, infinity, greaterThanEqual(magnitude, uvec4(0x477FF000u)));
    return mix(rounded, v, greaterThan(magnitude, uvec4(0x7F800000u)));  // NaN stays NaN
}

// Four values rounded to BF16 as the CPU's fp32_to_bf16 rounds them: to nearest, ties to even.
vec4 round4_to_bf16(vec4 v) {
    const uvec4 bits = floatBitsToUint(v);
    const vec4 rounded = uintBitsToFloat((bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u);
    return mix(rounded, v, greaterThan(bits & 0x7FFFFFFFu, uvec4(0x7F800000u)));  // NaN stays NaN
}

#endif
