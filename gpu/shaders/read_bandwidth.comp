#version 450
// Reads a buffer once with 16-byte loads spread over every workgroup: the device's read
// bandwidth, the floor a decode step's weight reads are compared with. The loads feed a value
// that is written only if it equals one the zero-filled buffer never produces, so no write
// traffic adds to the time and the compiler cannot drop the loads.
layout(local_size_x = 256) in;

layout(set = 0, binding = 0) readonly buffer Source { uvec4 source[]; };
layout(set = 0, binding = 1) writeonly buffer Sink { uint sink[]; };

layout(push_constant) uniform Params {
    uint count;  // uvec4 elements
} p;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uvec4 folded = uvec4(0);
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) folded ^= source[i];
    const uint value = folded.x ^ folded.y ^ folded.z ^ folded.w;
    if (value == 0xDEADBEEFu) sink[0] = value;
}
