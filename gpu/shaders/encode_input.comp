#version 450
// The input rows of a product encoded once as the CPU encodes them for WEIGHT_TYPE's weights
// (Q8_0, Q8_1 or Q8_K: q8_encoding.glsl), for the integer-dot tiles (matmul_dot_tiled.comp) of
// every product that reads them, instead of once per tile of weight rows. One thread per
// 32-value group (token t, group g: i = t * groups + g) writes, in encoded_input.glsl's layout,
// its 32 codes four to a word, its scale, the sums of its two halves' codes and its Q8_1
// code-sum scale. A Q8_K block's 8 groups are 8 consecutive threads of one workgroup (rows are
// whole 256-value blocks), which take its factor from their first values of largest magnitude,
// in order.
#extension GL_GOOGLE_include_directive : require

const uint THREADS = 64;
layout(local_size_x = THREADS) in;
layout(constant_id = 1) const uint WEIGHT_TYPE = 0;

layout(set = 0, binding = 0) readonly buffer Input { vec4 x4[]; };  // [n x cols], cols % 32 == 0
layout(set = 0, binding = 1) writeonly buffer Encoded { uint encoded[]; };

layout(push_constant) uniform Params {
    uint n;
    uint cols;
} p;

#include "weight_layout.glsl"
#include "q8_encoding.glsl"
#include "encoded_input.glsl"

shared float group_max_sh[THREADS];  // Q8_K: each group's first value of largest magnitude

void main() {
    const uint groups = p.cols / 32;
    const uint total = p.n * groups;
    const uint i = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * THREADS + gl_LocalInvocationID.x;
    const bool valid = i < total;  // every thread reaches the barrier below
    vec4 v[8];
    for (uint q = 0; q < 8; ++q) v[q] = valid ? x4[i * 8 + q] : vec4(0.0);
    float scale, f32_scale = 0.0;  // Q8_0 and Q8_1: the scale, and before its F16 rounding
    if (Q8_K_INPUT) {
        float max_value = 0.0, max_magnitude = 0.0;
        for (uint q = 0; q < 8; ++q) {
            for (uint e = 0; e < 4; ++e) track_first_max(v[q][e], max_value, max_magnitude);
        }
        group_max_sh[gl_LocalInvocationID.x] = max_value;
        barrier();
        max_value = 0.0;
        max_magnitude = 0.0;
        const uint block_first = gl_LocalInvocationID.x & ~7u;
        for (uint g = block_first; g < block_first + 8; ++g) track_first_max(group_max_sh[g], max_value, max_magnitude);
        const float factor = q8_k_factor(max_value);
        for (uint q = 0; q < 8; ++q) {
            for (uint e = 0; e < 4; ++e) v[q][e] = q8_k_code(v[q][e], factor);
        }
        scale = q8_k_scale(factor);
    } else {
        float amax = 0.0;
        for (uint q = 0; q < 8; ++q) {
            const vec4 a = abs(v[q]);
            amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
        }
        const float factor = q8_code_factor(amax);
        for (uint q = 0; q < 8; ++q) {
            for (uint e = 0; e < 4; ++e) v[q][e] = q8_0_code(v[q][e], factor);
        }
        f32_scale = q8_f32_scale(amax);
        scale = q8_scale(f32_scale);
    }
    if (!valid) return;
    vec2 half_sums = vec2(0.0);
    for (uint q = 0; q < 8; ++q) {
        encoded[encoded_codes_at(i) + q] = pack_i8x4(v[q]);
        half_sums[q / 4] += dot(v[q], vec4(1.0));
    }
    encoded[encoded_scale_at(total, i)] = floatBitsToUint(scale);
    encoded[encoded_half_sums_at(total, i)] = floatBitsToUint(half_sums.x);
    encoded[encoded_half_sums_at(total, i) + 1] = floatBitsToUint(half_sums.y);
    // The code sums are small integers, exact in F32 in any order.
    const float code_sum_scale = Q8_1_INPUT ? q8_1_code_sum_scale(f32_scale, half_sums.x + half_sums.y) : 0.0;
    encoded[encoded_code_sum_scale_at(total, i)] = floatBitsToUint(code_sum_scale);
}
