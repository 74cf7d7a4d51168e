// The CPU's Q8_0 (and Q8_1) encoding of a block of 32 input values whose largest magnitude is amax:
// code = round-to-nearest-even(v * (127 / amax)), scale = amax / 127 stored as F16. A code one
// step off costs a whole scale, large in a block holding an outlier, so both quotients must be
// the CPU's correctly rounded ones. Vulkan's division may be 2.5 ULP off and its fma may round
// twice (lavapipe's does), so the quotient is settled on integers instead.
#include "f16.glsl"

// x = mantissa_of(x) * 2^exponent_of(x) for a positive normal x, the mantissa in [2^23, 2^24).
uint mantissa_of(float x) { return (floatBitsToUint(x) & 0x7FFFFFu) | 0x800000u; }
int exponent_of(float x) { return int(floatBitsToUint(x) >> 23) - 150; }
bool is_normal(float x) {
    const uint biased_exponent = (floatBitsToUint(x) >> 23) & 0xFFu;
    return biased_exponent != 0u && biased_exponent != 0xFFu;
}

// Unsigned 64-bit integers as (high, low) words.
uvec2 wide_product(uint x, uint y) {
    uvec2 product;
    umulExtended(x, y, product.x, product.y);
    return product;
}
uvec2 shifted_left(uint x, int shift) { return uvec2(x >> (32 - shift), x << shift); }  // x < 2^24, 0 < shift < 32
bool greater(uvec2 x, uvec2 y) { return x.x > y.x || (x.x == y.x && x.y > y.y); }

// numerator / denominator rounded to nearest, as IEEE division does, for normal operands and
// quotient: the device's quotient, stepped to the float whose rounding interval holds the exact
// one. Otherwise (an overflow, a subnormal) the device's quotient.
float correctly_rounded_quotient(float numerator, float denominator) {
    const float n = abs(numerator), d = abs(denominator);
    float q = n / d;
    if (!is_normal(n) || !is_normal(d) || !is_normal(q)) return numerator / denominator;
    // With n = A 2^a, d = B 2^b and q = C 2^e, q is the rounded quotient when
    //   (2C - 1) B < A 2^s < (2C + 1) B,  s = a - b - e + 1,
    // the bounds being q's midpoints with its neighbours (for C = 2^23 the lower one is
    // (4C - 1) 2^(e-2), against A 2^(s+1)). All are below 2^51, and never equal to A's side:
    // they have an odd factor above 2^24, A none. Four steps cover Vulkan's 2.5-ULP division.
    const uint mantissa_n = mantissa_of(n), mantissa_d = mantissa_of(d);
    for (int step = 0; step < 4; ++step) {
        const uint c = mantissa_of(q);
        const int shift = clamp(exponent_of(n) - exponent_of(d) - exponent_of(q) + 1, 1, 30);  // 23..26
        const uvec2 scaled_n = shifted_left(mantissa_n, shift);
        float next;
        if (greater(scaled_n, wide_product(2u * c + 1u, mantissa_d))) {
            next = uintBitsToFloat(floatBitsToUint(q) + 1u);
        } else if (c == 0x800000u ? greater(wide_product(4u * c - 1u, mantissa_d), shifted_left(mantissa_n, shift + 1))
                                  : greater(wide_product(2u * c - 1u, mantissa_d), scaled_n)) {
            next = uintBitsToFloat(floatBitsToUint(q) - 1u);
        } else {
            break;
        }
        if (!is_normal(next)) break;
        q = next;
    }
    return (numerator < 0.0) != (denominator < 0.0) ? -q : q;
}

// amax below about 1e-37: the factor overflows, as the CPU's does.
float q8_code_factor(float amax) { return amax == 0.0 ? 0.0 : correctly_rounded_quotient(127.0, amax); }

// The Q8_0 (and Q8_1) code of v given q8_code_factor.
float q8_0_code(float v, float factor) { return clamp(roundEven(v * factor), -128.0, 127.0); }

// The block's scale before its F16 rounding, amax / 127, and as stored.
float q8_f32_scale(float amax) { return correctly_rounded_quotient(amax, 127.0); }
float q8_scale(float f32_scale) { return round_to_f16(f32_scale); }

// Q8_1's second scale (the input of Q4_1 and Q5_1 weights, whose minimums multiply it): the F32
// scale times the sum of the block's 32 codes, rounded to F16.
float q8_1_code_sum_scale(float f32_scale, float code_sum) {
    precise float scaled_sum = f32_scale * code_sum;
    return round_to_f16(scaled_sum);
}

// The CPU's Q8_K encoding of a 256-value block (K-quant and IQ4_XS weights) whose first value
// of largest magnitude is max_value, sign kept: code = min(round-to-nearest-even(v * factor),
// 127) with factor = -127 / max_value, and scale = 1 / factor, kept in F32.
// A magnitude below about 3.7e-37 makes the factor overflow; the CPU's codes and scale are then
// 0, as a factor of 0 gives.
float q8_k_factor(float max_value) {
    const float factor = max_value == 0.0 ? 0.0 : correctly_rounded_quotient(-127.0, max_value);
    return isinf(factor) ? 0.0 : factor;
}

float q8_k_scale(float factor) { return factor == 0.0 ? 0.0 : correctly_rounded_quotient(1.0, factor); }

// The Q8_K code of v given q8_k_factor.
float q8_k_code(float v, float factor) { return min(roundEven(v * factor), 127.0); }

// Folds value into (the first value of largest magnitude so far, its magnitude), scanning in
// element order: only a strictly larger magnitude replaces it, as the CPU's scan does.
void track_first_max(float value, inout float max_value, inout float max_magnitude) {
    if (abs(value) > max_magnitude) {
        max_magnitude = abs(value);
        max_value = value;
    }
}

// Four integer values of -128..127 as the bytes of a word, the first lowest.
uint pack_i8x4(vec4 v) {
    const ivec4 b = ivec4(v) & 0xFF;
    return uint(b.x) | (uint(b.y) << 8) | (uint(b.z) << 16) | (uint(b.w) << 24);
}

// One 32-value group's part of a product with the input encoded as the CPU encodes it for these
// weights (needs weight_layout.glsl), summed the way the CPU's vec_dot sums a block, from the
// exact integer sums of the code products (s.x: elements 0-15, s.y: 16-31) and of the input
// codes (x_sums, the same halves). dx is the input's scale; dx_sum its Q8_1 code-sum scale.
// scales: the weights' (scale, minimum) of each half, as GROUP_SCALES gives them; with_min:
// whether the weights' format has a minimum (Q4_1, Q5_1: the input is then Q8_1).
// - Q8_0 inputs, and Q8_1 inputs of weights without a minimum: (scale x dx) x (code products);
// - Q8_1 inputs of weights with a minimum: the same plus minimum x dx_sum;
// - Q8_K inputs: dx x (scale x code products - minimum x input codes), half by half.
// `precise`: each operation rounds on its own, as on the CPU (built without contraction); the
// callers add the result to their sums the same way.
float group_product(bool with_min, vec4 scales, float dx, float dx_sum, vec2 s, vec2 x_sums) {
    precise float product;
    if (Q8_K_INPUT) {
        product = dx * ((scales.x * s.x - scales.y * x_sums.x) + (scales.z * s.y - scales.w * x_sums.y));
    } else if (with_min) {
        product = (scales.x * dx) * (s.x + s.y) + scales.y * dx_sum;
    } else {
        product = (scales.x * dx) * (s.x + s.y);
    }
    return product;
}
