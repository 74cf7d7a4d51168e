#version 450
#extension GL_GOOGLE_include_directive : require
// The gated activation of the FFN, in place: gate[i] = act(gate[i]) * up[i], SwiGLU
// (gelu = 0) or GeGLU (gelu = 1), as activation.glsl defines them.
layout(local_size_x = 256) in;

layout(set = 0, binding = 0) buffer Gate { float g[]; };
layout(set = 0, binding = 1) readonly buffer Up { float u[]; };

layout(push_constant) uniform Params {
    uint count;
    uint gelu;
} p;

#include "activation.glsl"

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= p.count) return;
    g[i] = gated_activation(g[i], u[i], p.gelu != 0);
}
