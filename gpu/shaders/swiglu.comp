#version 450
// gate[i] = silu(gate[i]) * up[i]
layout(local_size_x = 256) in;

layout(set = 0, binding = 0) buffer Gate { float g[]; };
layout(set = 0, binding = 1) readonly buffer Up { float u[]; };

layout(push_constant) uniform Params {
    uint count;
} p;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < p.count) g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
}
