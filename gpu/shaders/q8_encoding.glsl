// The CPU's Q8_0 (and Q8_1) encoding of a block of 32 input values whose largest magnitude is amax:
// code = round-to-nearest-even(v * (127 / amax)), scale = amax / 127 stored as F16. A code one
// step off costs a whole scale, large in a block holding an outlier, so both quotients are
// refined by a Newton step on their fused residual towards the CPU's correctly rounded ones
// (Vulkan's division may be 2.5 ULP off; an unfused fma would undo the refinement, but the
// GPUs and lavapipe fuse it).
float refined_quotient(float numerator, float denominator) {
    const float inverse = 1.0 / denominator;
    const float q = numerator * inverse;
    if (isinf(q)) return q;  // amax below about 1e-37: the CPU's factor overflows too
    return fma(fma(-q, denominator, numerator), inverse, q);
}

float q8_code_factor(float amax) { return amax == 0.0 ? 0.0 : refined_quotient(127.0, amax); }

// The Q8_0 (and Q8_1) code of v given q8_code_factor.
float q8_0_code(float v, float factor) { return clamp(roundEven(v * factor), -128.0, 127.0); }

float q8_scale(float amax) { return unpackHalf2x16(packHalf2x16(vec2(refined_quotient(amax, 127.0), 0.0))).x; }

// Q8_1's second scale (the input of Q4_1 and Q5_1 weights, whose minimums multiply it): the F32
// scale amax / 127, before its F16 rounding, times the sum of the block's 32 codes, rounded to F16.
float q8_1_code_sum_scale(float amax, float code_sum) {
    precise float scaled_sum = refined_quotient(amax, 127.0) * code_sum;
    return unpackHalf2x16(packHalf2x16(vec2(scaled_sum, 0.0))).x;
}

// The CPU's Q8_K encoding of a 256-value block (K-quant and IQ4_XS weights) whose first value
// of largest magnitude is max_value, sign kept: code = min(round-to-nearest-even(v * factor),
// 127) with factor = -127 / max_value, and scale = 1 / factor, kept in F32.
// A magnitude below about 3.7e-37 makes the factor overflow; the CPU's codes and scale are then
// 0, as a factor of 0 gives.
float q8_k_factor(float max_value) {
    const float factor = max_value == 0.0 ? 0.0 : refined_quotient(-127.0, max_value);
    return isinf(factor) ? 0.0 : factor;
}

float q8_k_scale(float factor) { return factor == 0.0 ? 0.0 : refined_quotient(1.0, factor); }

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
// scales: the weights' (scale, minimum) of each half, as GROUP_SCALES gives them.
// - Q8_0 inputs: (scale x dx) x (code products);
// - Q8_1 inputs: the same plus minimum x dx_sum;
// - Q8_K inputs: dx x (scale x code products - minimum x input codes), half by half.
// `precise`: each operation rounds on its own, as on the CPU (built without contraction); the
// callers add the result to their sums the same way.
float group_product(vec4 scales, float dx, float dx_sum, vec2 s, vec2 x_sums) {
    precise float product;
    if (Q8_K_INPUT) {
        product = dx * ((scales.x * s.x - scales.y * x_sums.x) + (scales.z * s.y - scales.w * x_sums.y));
    } else if (Q8_1_INPUT) {
        product = (scales.x * dx) * (s.x + s.y) + scales.y * dx_sum;
    } else {
        product = (scales.x * dx) * (s.x + s.y);
    }
    return product;
}
