#version 450
// out[i] = in[src(i)] / sqrt(mean(in[src(i)]^2) + eps) * weight, one workgroup per output
// row; src(i) = rows[i] when use_map is set (the final norm of the rows that want logits),
// else i. accumulate: out[i] += the normed row instead (a post-norm added to the residual).
// in and out may be the same buffer (record_head_norm runs in place): every element
// is read before it is written, by the thread that writes it.
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer Input { float x[]; };     // [* x cols]
layout(set = 0, binding = 1) readonly buffer Weight { float weight[]; };  // [cols]
layout(set = 0, binding = 2) buffer Output { float y[]; };             // [n x cols]
layout(set = 0, binding = 3) readonly buffer RowMap { int rows[]; };   // [n]

layout(push_constant) uniform Params {
    uint cols;
    float eps;
    uint use_map;
    uint accumulate;
} p;

shared float partial[64];

void main() {
    const uint i = gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    const uint src = (p.use_map != 0 ? uint(rows[i]) : i) * p.cols;
    float s = 0.0;
    for (uint e = tid; e < p.cols; e += 64) s += x[src + e] * x[src + e];
    partial[tid] = s;
    barrier();
    for (uint stride = 32; stride > 0; stride /= 2) {
        if (tid < stride) partial[tid] += partial[tid + stride];
        barrier();
    }
    const float scale = 1.0 / sqrt(partial[0] / float(p.cols) + p.eps);
    for (uint e = tid; e < p.cols; e += 64) {
        const float normed = (x[src + e] * scale) * weight[e];
        y[i * p.cols + e] = p.accumulate != 0 ? y[i * p.cols + e] + normed : normed;
    }
}
