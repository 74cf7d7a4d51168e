#include "gpu/vk_matvec.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace inferscope::gpu {
namespace {

constexpr uint32_t kMaxRowThreads = 256;
constexpr uint32_t kMaxTeamRows = 4;
constexpr uint32_t kMatvecAccumulators = 16;  // matvec.comp's ACC
// matvec.comp's shared memory: part[ACC][MAX_PARTS] floats (which also hold the F32 build's F16/BF16-rounded input or Q8_K
// block factors and scales) and finish_counter.glsl's flag, and in the integer-dot build per token and 32-element group of the
// input 32 int8, a scale and the sums of its two halves, and one more float for Q8_K (the group's largest value) or for Q8_1 (its
// code-sum scale); each of these two arrays has one unused element where it is not needed.
constexpr uint32_t kMatvecMaxParts = 256;  // matvec.comp's MAX_PARTS
constexpr uint32_t kMatvecPartBytes = kMatvecAccumulators * kMatvecMaxParts * 4 + 4;
constexpr uint32_t kQuantizedGroupBytes = 32 + 4 + 8;
static_assert(kMatvecPartBytes <= kRequiredSharedMemoryBytes && kMaxRowThreads <= kRequiredWorkgroupThreads,
              "devices are chosen by what the mat-vec needs");

// matvec.comp's push constants.
struct MatvecPush {
    uint32_t cols;
    uint32_t end0, end1, end2;
    uint32_t y_stride;
    uint32_t y_offset;
    uint32_t flags;
    float eps;
};

// The QKV_PREPARE build's: qkv_prepare.comp's step after the product.
struct MatvecQkvPush : MatvecPush {
    uint32_t head_dim, rope_dim, prepare_flags, block_tokens;
};

// How one dispatch of matvec.comp is shaped for rows of `cols` elements.
struct MatvecShape {
    Shader shader;
    SpecConstants spec;
    uint32_t rows_per_group;
};

uint32_t next_power_of_two(uint32_t v) {
    uint32_t p = 1;
    while (p < v) p *= 2;
    return p;
}

// Teams of about half as many threads as a row has units (the tuning's units per thread), one
// row each, fill the GPU for the layers' matrices. A tall matrix (an output projection: as
// many rows as the vocabulary) has so many rows that one-row teams make launching workgroups
// the bound: there a team of a quarter as many threads computes up to four rows at once.
// What a dispatch adds to the product: the input's RMSNorm, the gated activation, a post-norm.
struct MatvecExtras {
    bool norm = false, gated = false, post_norm = false, qkv_prepare = false;
};

// The type whose encoding of the input serves every matrix of a dispatch (matvec_fusable's).
ShaderWeightType dispatch_input_encoding(std::span<const ShaderWeightType> types) {
    ShaderWeightType encoding = types[0];
    for (ShaderWeightType type : types) encoding = shared_input_encoding(encoding, type).value_or(encoding);
    return encoding;
}

// types: the dispatch's matrices' (1..3; matrix 0's sets the units, all of them the input's encoding).
MatvecShape matvec_shape(const Kernels& k, std::span<const ShaderWeightType> types, uint32_t rows, uint32_t cols, uint32_t n,
                         MatvecExtras extras) {
    const bool norm = extras.norm, gated = extras.gated;
    // The type the input is encoded for; block formats of 32 elements per unit, as every matrix's are.
    const ShaderWeightType type = dispatch_input_encoding(types);
    const KernelTuning& tuning = k.tuning();
    // A unit is what one thread reads at a time: a block of 32 or 8 elements (16 bytes of F16).
    const uint32_t units = is_block_type(type) ? cols / 32 : (cols + 7) / 8;
    const uint32_t subgroup = Kernels::kMatmulThreads / k.matmul_rows_per_group();
    const bool tall = rows >= tuning.matvec_tall_rows;
    const uint32_t units_per_thread = tall ? tuning.matvec_tall_units_per_thread : tuning.matvec_units_per_thread;
    // A team is no smaller than a subgroup: its reduction is one subgroupAdd.
    const uint32_t row_threads =
        std::clamp(next_power_of_two((units + units_per_thread - 1) / units_per_thread), std::max(subgroup, 8u), kMaxRowThreads);
    const uint32_t team_rows = tall ? std::clamp(kMatvecAccumulators / (n * (gated ? 2u : 1u)), 1u, kMaxTeamRows) : 1u;
    // With the norm prologue every workgroup reads the x rows once more: more rows share that read.
    const uint32_t group_threads =
        std::max(row_threads, tall || norm ? tuning.matvec_wide_group_threads : tuning.matvec_group_threads);
    uint32_t config = n | (cols % 8 == 0 ? 0x100u : 0u) | (norm ? 0x200u : 0u) | (gated ? 0x400u : 0u) | (team_rows << 11) |
                      (extras.post_norm ? 0x8000u : 0u);
    const bool subgroups = k.matmul_shader() == Shader::Matmul;
    Shader shader = extras.qkv_prepare ? (subgroups ? Shader::MatvecQkv : Shader::MatvecSharedQkv)
                                       : (subgroups ? Shader::Matvec : Shader::MatvecShared);
    if (matvec_uses_integer_dot(k, type, cols, n)) {
        shader = extras.qkv_prepare ? Shader::MatvecDotQkv : Shader::MatvecDot;
        config |= (cols / 32) << 16;
    } else if (matvec_stages_half_input(type, cols, n)) {
        config |= 1u << 16;
    } else if (k.encodes_input(type)) {
        config |= 0x4000u;  // the F32 build, encoding each group of the input as it reads it
        // ... with each 256-element block's Q8_K factor and scale computed first, into part[][].
        if (q8_k_input(type)) {
            const uint64_t floats = 2 * uint64_t{n} * (cols / 256);
            if (floats > uint64_t{kMatvecAccumulators} * kMatvecMaxParts) {
                throw Error("rows of " + std::to_string(cols) + " values are too long for the GPU's mat-vec: encoding " +
                            std::to_string(n) + " of them takes " + std::to_string(floats) +
                            " floats of block factors and scales, at most " +
                            std::to_string(kMatvecAccumulators * kMatvecMaxParts) + " fit");
            }
            config |= (cols / 32) << 16;
        }
    }
    // Absent matrices take the last one's type.
    const auto type_of = [&](size_t i) { return static_cast<uint32_t>(types[std::min(i, types.size() - 1)]); };
    return {shader,
            {group_threads, type_of(0), row_threads, config, type_of(1), type_of(2)},
            group_threads / row_threads * team_rows};
}

// The types of ws, in order.
std::vector<ShaderWeightType> types_of(std::span<const DeviceMatrix* const> ws) {
    std::vector<ShaderWeightType> types;
    for (const DeviceMatrix* w : ws) types.push_back(w->type);
    return types;
}

// Whether matrices of types a and b can share a matvec.comp dispatch: it takes its rows' units
// from matrix 0's type and encodes its input for all of them.
bool formats_share_dispatch(ShaderWeightType a, ShaderWeightType b) { return a == b || shared_input_encoding(a, b).has_value(); }

void check_tokens(uint32_t n) {
    if (n > kMatvecMaxTokens) {
        throw Error("internal: matvec takes at most " + std::to_string(kMatvecMaxTokens) + " tokens, got " + std::to_string(n));
    }
}

// One dispatch over `rows` rows (push.end2), folding workgroup counts above the device's X
// limit into Y. The parts of a split matrix write disjoint rows, yet each is followed by a
// barrier: every build of matvec.comp holds the post-norm's atomic counter on binding 6, which
// the parts bind to the output, so without one the next part would read it unsynchronised.
template <typename Push>
void dispatch_matvec(Kernels& k, VkCommandBuffer cmd, const MatvecShape& shape, const std::vector<VkBuffer>& buffers,
                     const Push& push, bool barrier) {
    const MatvecPush& base = push;
    const uint64_t groups = (static_cast<uint64_t>(base.end2) + shape.rows_per_group - 1) / shape.rows_per_group;
    const auto [groups_x, groups_y] = k.fold_groups(groups);
    k.dispatch(cmd, shape.shader, shape.spec, buffers, &push, sizeof push, groups_x, groups_y, barrier);
}

}  // namespace

bool matvec_uses_integer_dot(const Kernels& k, ShaderWeightType type, uint32_t cols, uint32_t n) {
    if (!k.encodes_input(type)) return false;
    const uint64_t groups = cols / 32;
    const uint64_t per_group_float_bytes = 4 * n * groups;
    const uint64_t extra_bytes = (q8_k_input(type) ? per_group_float_bytes : 4) + (q8_1_input(type) ? per_group_float_bytes : 4);
    return groups < (1u << 16) && kMatvecPartBytes + n * groups * kQuantizedGroupBytes + extra_bytes <= k.max_shared_bytes();
}

bool matvec_stages_half_input(ShaderWeightType type, uint32_t cols, uint32_t n) {
    const uint64_t padded_cols = (uint64_t{cols} + 7) / 8 * 8;  // whole units of 8
    return (type == ShaderWeightType::F16 || type == ShaderWeightType::BF16) &&
           n * padded_cols <= uint64_t{kMatvecAccumulators} * kMatvecMaxParts;
}

bool matvec_groupable(std::span<const DeviceMatrix* const> ws) {
    if (ws.empty() || ws.size() > 3) return false;
    return std::all_of(ws.begin(), ws.end(),
                       [&](const DeviceMatrix* w) { return w->cols == ws[0]->cols && w->parts.size() == 1; });
}

bool matvec_fusable(std::span<const DeviceMatrix* const> ws) {
    return matvec_groupable(ws) &&
           std::all_of(ws.begin(), ws.end(), [&](const DeviceMatrix* w) { return formats_share_dispatch(w->type, ws[0]->type); });
}

void record_matvec(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer x, VkBuffer y, uint32_t n, uint32_t y_stride,
                   bool accumulate, const MatvecNorm& norm, bool barrier) {
    check_tokens(n);
    if (n == 0) return;
    const bool normed = norm.weight != VK_NULL_HANDLE;
    const auto cols = static_cast<uint32_t>(w.cols);
    const MatvecShape shape = matvec_shape(k, std::span(&w.type, 1), static_cast<uint32_t>(w.rows), cols, n, {.norm = normed});
    for (const DeviceMatrix::Part& part : w.parts) {
        const bool last = &part == &w.parts.back();
        const auto rows = static_cast<uint32_t>(part.rows);
        const MatvecPush push{cols,    rows, rows, rows, y_stride, static_cast<uint32_t>(part.row_begin), accumulate ? 1u : 0u,
                              norm.eps};
        const VkBuffer weights = part.buffer.handle();
        dispatch_matvec(k, cmd, shape, {weights, weights, weights, x, y, y, y, normed ? norm.weight : x}, push, barrier || !last);
    }
}

void record_matvec_post_normed(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer x, VkBuffer projected, uint32_t n,
                               const MatvecPostNorm& post, bool barrier) {
    check_tokens(n);
    if (w.parts.size() != 1) throw Error("internal: record_matvec_post_normed needs a single-part matrix");
    if (n == 0) return;
    const auto rows = static_cast<uint32_t>(w.rows);
    const auto cols = static_cast<uint32_t>(w.cols);
    const MatvecShape shape = matvec_shape(k, std::span(&w.type, 1), rows, cols, n, {.post_norm = true});
    const MatvecPush push{cols, rows, rows, rows, rows, 0, 0, post.eps};
    const VkBuffer weights = w.parts[0].buffer.handle();
    // matvec.comp's POST_NORM bindings: the scratch, the residual, the counter and the norm's weight.
    dispatch_matvec(k, cmd, shape, {weights, weights, weights, x, projected, post.residual, post.finished_groups, post.weight},
                    push, barrier);
}

void record_matvec_multi(Kernels& k, VkCommandBuffer cmd, std::span<const DeviceMatrix* const> ws, VkBuffer x,
                         std::span<const VkBuffer> ys, uint32_t n, const MatvecNorm& norm, bool barrier) {
    check_tokens(n);
    if (!matvec_fusable(ws) || ys.size() != ws.size()) {
        throw Error("internal: record_matvec_multi needs 1..3 single-part matrices of one type and width, one output each");
    }
    if (n == 0) return;
    const bool normed = norm.weight != VK_NULL_HANDLE;
    uint32_t ends[3] = {};
    std::vector<VkBuffer> buffers(8);
    for (size_t i = 0; i < 3; ++i) {
        const size_t from = std::min(i, ws.size() - 1);  // absent matrices: empty row ranges, bindings repeated
        ends[i] = (i > 0 ? ends[i - 1] : 0) + (i < ws.size() ? static_cast<uint32_t>(ws[i]->rows) : 0);
        buffers[i] = ws[from]->parts[0].buffer.handle();
        buffers[4 + i] = ys[from];
    }
    buffers[3] = x;
    buffers[7] = normed ? norm.weight : x;
    const auto cols = static_cast<uint32_t>(ws[0]->cols);
    const MatvecShape shape = matvec_shape(k, types_of(ws), ends[2], cols, n, {.norm = normed});
    const MatvecPush push{cols, ends[0], ends[1], ends[2], static_cast<uint32_t>(ws[0]->rows), 0, 0, norm.eps};
    dispatch_matvec(k, cmd, shape, buffers, push, barrier);
}

bool matvec_prepares_qkv(const Kernels& k, std::span<const DeviceMatrix* const> ws, const QkvPrepare& prepare) {
    const uint32_t head_dim = prepare.rope.head_dim;
    if (ws.size() != 3 || !matvec_fusable(ws) || head_dim == 0 || head_dim > kMatvecMaxHeadDim) return false;
    const uint64_t q_rows = uint64_t{prepare.rope.n_heads} * head_dim, kv_rows = uint64_t{prepare.n_head_kv} * head_dim;
    return static_cast<uint64_t>(ws[0]->rows) == q_rows && static_cast<uint64_t>(ws[1]->rows) == kv_rows &&
           static_cast<uint64_t>(ws[2]->rows) == kv_rows && k.binds_enough_buffers(Shader::MatvecQkv);
}

void record_matvec_qkv_prepared(Kernels& k, VkCommandBuffer cmd, std::span<const DeviceMatrix* const> ws, VkBuffer x, uint32_t n,
                                const MatvecNorm& norm, const QkvPrepare& prepare, VkBuffer head_counters, bool barrier) {
    check_tokens(n);
    if (!matvec_prepares_qkv(k, ws, prepare) || (norm.weight != VK_NULL_HANDLE && norm.eps != prepare.eps)) {
        throw Error("internal: record_matvec_qkv_prepared needs q, k, v as matvec_prepares_qkv takes them and one epsilon");
    }
    if (n == 0) return;
    const bool normed = norm.weight != VK_NULL_HANDLE;
    const uint32_t end0 = static_cast<uint32_t>(ws[0]->rows), end1 = end0 + static_cast<uint32_t>(ws[1]->rows);
    const uint32_t end2 = end1 + static_cast<uint32_t>(ws[2]->rows);
    const auto cols = static_cast<uint32_t>(ws[0]->cols);
    const MatvecShape shape = matvec_shape(k, types_of(ws), end2, cols, n, {.norm = normed, .qkv_prepare = true});
    MatvecQkvPush push;
    static_cast<MatvecPush&>(push) = {cols, end0, end1, end2, end0, 0, 0, prepare.eps};
    push.head_dim = prepare.rope.head_dim;
    push.rope_dim = prepare.rope.rope_dim;
    push.prepare_flags = qkv_prepare_flags(prepare) | (prepare.rope.neox ? 8u : 0u) | (prepare.kv_f16 ? 16u : 0u);
    push.block_tokens = prepare.block_tokens;
    // An absent bias or norm buffer is never read; q stands in for its binding.
    const VkBuffer bias = prepare.bias != VK_NULL_HANDLE ? prepare.bias : prepare.q;
    const VkBuffer qk_norms = prepare.norms != VK_NULL_HANDLE ? prepare.norms : prepare.q;
    const std::vector<VkBuffer> buffers = {ws[0]->parts[0].buffer.handle(),
                                           ws[1]->parts[0].buffer.handle(),
                                           ws[2]->parts[0].buffer.handle(),
                                           x,
                                           prepare.q,
                                           prepare.k,
                                           prepare.v,
                                           normed ? norm.weight : x,
                                           bias,
                                           qk_norms,
                                           prepare.positions,
                                           prepare.rope_table,
                                           prepare.slots,
                                           prepare.k_cache,
                                           prepare.v_cache,
                                           head_counters};
    dispatch_matvec(k, cmd, shape, buffers, push, barrier);
}

void record_matvec_grouped(Kernels& k, VkCommandBuffer cmd, std::span<const DeviceMatrix* const> ws, VkBuffer x,
                           std::span<const VkBuffer> ys, uint32_t n, const MatvecNorm& norm) {
    if (!matvec_groupable(ws) || ys.size() != ws.size()) {
        throw Error("internal: record_matvec_grouped needs 1..3 single-part matrices of one width, one output each");
    }
    std::vector<const DeviceMatrix*> group;
    std::vector<VkBuffer> group_ys;
    std::vector<bool> recorded(ws.size(), false);
    for (size_t first = 0; first < ws.size(); ++first) {
        if (recorded[first]) continue;
        group.clear();
        group_ys.clear();
        for (size_t i = first; i < ws.size(); ++i) {
            const std::array<const DeviceMatrix*, 2> pair = {ws[first], ws[i]};
            if (recorded[i] || !matvec_fusable(pair)) continue;
            group.push_back(ws[i]);
            group_ys.push_back(ys[i]);
            recorded[i] = true;
        }
        const bool last = std::all_of(recorded.begin(), recorded.end(), [](bool r) { return r; });
        record_matvec_multi(k, cmd, group, x, group_ys, n, norm, last);
    }
}

void record_matvec_gated(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& gate, const DeviceMatrix& up, VkBuffer x,
                         VkBuffer out, uint32_t n, FfnActivation activation, const MatvecNorm& norm, bool barrier) {
    check_tokens(n);
    bool same_split = formats_share_dispatch(gate.type, up.type) && gate.rows == up.rows && gate.cols == up.cols &&
                      gate.parts.size() == up.parts.size();
    for (size_t i = 0; same_split && i < gate.parts.size(); ++i) {
        same_split = gate.parts[i].row_begin == up.parts[i].row_begin && gate.parts[i].rows == up.parts[i].rows;
    }
    if (!same_split) {
        throw Error("internal: record_matvec_gated needs gate and up of types that share a dispatch, one shape and row split");
    }
    if (n == 0) return;
    const bool normed = norm.weight != VK_NULL_HANDLE;
    const auto cols = static_cast<uint32_t>(gate.cols);
    const std::array<ShaderWeightType, 2> types = {gate.type, up.type};
    const MatvecShape shape = matvec_shape(k, types, static_cast<uint32_t>(gate.rows), cols, n, {.norm = normed, .gated = true});
    const uint32_t flags = activation == FfnActivation::GeluTanh ? 2u : 0u;
    for (size_t i = 0; i < gate.parts.size(); ++i) {
        const DeviceMatrix::Part& part = gate.parts[i];
        const auto rows = static_cast<uint32_t>(part.rows);
        const MatvecPush push{cols,  rows,    rows, rows, static_cast<uint32_t>(gate.rows), static_cast<uint32_t>(part.row_begin),
                              flags, norm.eps};
        const VkBuffer g = part.buffer.handle(), u = up.parts[i].buffer.handle();
        dispatch_matvec(k, cmd, shape, {g, u, u, x, out, out, out, normed ? norm.weight : x}, push,
                        barrier || i + 1 < gate.parts.size());
    }
}

}  // namespace inferscope::gpu
