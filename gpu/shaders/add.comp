#version 450
// y[i] += x[i % period] for i < count: a bias broadcast over rows (period = row length) or a
// residual connection (period = count).
layout(local_size_x = 256) in;

layout(set = 0, binding = 0) buffer Target { float y[]; };
layout(set = 0, binding = 1) readonly buffer Addend { float x[]; };

layout(push_constant) uniform Params {
    uint count;
    uint period;
} p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.count) y[i] += x[i % p.period];
}
