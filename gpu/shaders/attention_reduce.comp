#version 450
// Combines the per-split partials of attention_split.comp into the context: one workgroup
// per (token, query head); each split's unnormalised V sum and softmax sum are rescaled from
// the split's own maximum to the overall one (an empty split has maximum -inf: weight 0, and
// its V sum, never written, is not read).

layout(local_size_x = 64) in;
const uint MAX_SPLITS = 256;

layout(set = 0, binding = 0) readonly buffer Partials { float partials[]; };
layout(set = 0, binding = 1) writeonly buffer Output { float out_ctx[]; };  // [n x n_head x head_dim]

layout(push_constant) uniform Params {
    uint n_head;
    uint head_dim;
    uint n_tokens;
    uint splits;
} p;

shared float weight_sh[MAX_SPLITS];

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;  // token * n_head + head
    if (row >= p.n_tokens * p.n_head) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint stats = p.n_tokens * p.n_head * p.splits * p.head_dim + row * p.splits * 2;
    float overall_max = -1.0 / 0.0;
    for (uint s = 0; s < p.splits; ++s) overall_max = max(overall_max, partials[stats + 2 * s]);
    float total = 0.0;
    for (uint s = 0; s < p.splits; ++s) total += exp(partials[stats + 2 * s] - overall_max) * partials[stats + 2 * s + 1];
    for (uint s = tid; s < p.splits; s += 64) weight_sh[s] = exp(partials[stats + 2 * s] - overall_max) / total;
    barrier();
    const uint acc = row * p.splits * p.head_dim;
    for (uint d = tid; d < p.head_dim; d += 64) {
        float sum = 0.0;
        for (uint s = 0; s < p.splits; ++s) {
            if (weight_sh[s] != 0.0) sum += weight_sh[s] * partials[acc + s * p.head_dim + d];
        }
        out_ctx[row * p.head_dim + d] = sum;
    }
}
