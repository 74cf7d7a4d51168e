#version 450
// Rotary position embedding in place over [n x n_heads x head_dim]; the cosines and sines
// of every (position, pair) come from a table the host computes once exactly as the CPU
// backend does, so both rotate by bit-identical angles at any position.
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) buffer Heads { float x[]; };
layout(set = 0, binding = 1) readonly buffer Positions { int pos[]; };    // [n]
layout(set = 0, binding = 2) readonly buffer Table { vec2 cos_sin[]; };   // [positions x rope_dim/2]

layout(push_constant) uniform Params {
    uint n;
    uint n_heads;
    uint head_dim;
    uint rope_dim;
    uint neox;  // 1: pairs (i, i + rope_dim/2); 0: pairs (2i, 2i+1)
} p;

void main() {
    const uint half_dim = p.rope_dim / 2;
    const uint id = gl_GlobalInvocationID.x;
    if (id >= p.n * p.n_heads * half_dim) return;
    const uint i = id % half_dim;
    const uint head = (id / half_dim) % p.n_heads;
    const uint t = id / (half_dim * p.n_heads);
    const vec2 cs = cos_sin[uint(pos[t]) * half_dim + i];
    const uint base = (t * p.n_heads + head) * p.head_dim;
    const uint first = base + (p.neox != 0 ? i : 2 * i);
    const uint second = base + (p.neox != 0 ? i + half_dim : 2 * i + 1);
    const float a = x[first];
    const float b = x[second];
    x[first] = a * cs.x - b * cs.y;
    x[second] = a * cs.y + b * cs.x;
}
