#include "gpu/vk_ops.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "gpu/vk_matvec.h"

namespace inferscope::gpu {
namespace {

uint32_t groups(uint64_t items, uint32_t per_group) { return static_cast<uint32_t>((items + per_group - 1) / per_group); }

}  // namespace

uint64_t DeviceMatrix::bytes() const {
    uint64_t total = 0;
    for (const Part& p : parts) total += p.buffer.size_bytes();
    return total;
}

uint64_t device_matrix_bytes(const WeightMatrix& w) {
    shader_weight_type(w.type);  // refuses a type no shader reads
    return w.row_bytes * static_cast<uint64_t>(w.rows);
}

DeviceMatrix upload_matrix(VkContext& ctx, BufferArena& arena, const WeightMatrix& w, uint64_t max_part_bytes) {
    DeviceMatrix m;
    m.type = shader_weight_type(w.type);
    m.rows = w.rows;
    m.cols = w.cols;
    const uint64_t row_bytes = w.row_bytes;
    const uint64_t max_bytes = max_part_bytes > 0 ? max_part_bytes : ctx.info().max_storage_buffer_range_bytes;
    if (row_bytes > max_bytes) {
        throw UnsupportedError("weight " + w.name + ": one row (" + std::to_string(row_bytes) +
                               " bytes) exceeds the device's largest storage binding");
    }
    const auto rows_per_part = static_cast<int64_t>(max_bytes / row_bytes);
    for (int64_t begin = 0; begin < w.rows; begin += rows_per_part) {
        const int64_t rows = std::min(rows_per_part, w.rows - begin);
        const uint64_t bytes = row_bytes * static_cast<uint64_t>(rows);
        DeviceMatrix::Part part{arena.place(bytes), begin, rows};
        ctx.upload(part.buffer, 0, w.row(begin), bytes);
        m.parts.push_back(std::move(part));
    }
    return m;
}

Buffer finish_counters(VkContext& ctx, uint64_t count) {
    const std::vector<uint32_t> zeros(std::max<uint64_t>(count, 1), 0);
    Buffer counters(ctx, zeros.size() * sizeof(uint32_t), Buffer::Kind::Device);
    ctx.upload(counters, 0, zeros.data(), zeros.size() * sizeof(uint32_t));
    return counters;
}

Buffer upload_floats(VkContext& ctx, BufferArena& arena, const std::vector<float>& values) {
    Buffer b = arena.place(values.size() * sizeof(float));
    ctx.upload(b, 0, values.data(), values.size() * sizeof(float));
    return b;
}

Buffer upload_floats(VkContext& ctx, const std::vector<float>& values) {
    Buffer b(ctx, values.size() * sizeof(float), Buffer::Kind::Device);
    ctx.upload(b, 0, values.data(), values.size() * sizeof(float));
    return b;
}

bool matmul_reads_encoded_input(const Kernels& k, ShaderWeightType type, uint32_t n) {
    return n > kMatvecMaxTokens && k.encodes_input(type);
}

bool encoding_serves(ShaderWeightType encoded, ShaderWeightType type) {
    return is_block_type(encoded) && is_block_type(type) && q8_k_input(encoded) == q8_k_input(type) &&
           (q8_1_input(encoded) || !q8_1_input(type));
}

std::optional<ShaderWeightType> shared_input_encoding(ShaderWeightType a, ShaderWeightType b) {
    if (encoding_serves(a, b)) return a;
    if (encoding_serves(b, a)) return b;
    return std::nullopt;
}

uint64_t encoded_input_bytes(uint32_t n, uint32_t cols) {
    constexpr uint64_t kGroupBytes = 32 + 4 + 8 + 4;  // codes, scale, half sums, code-sum scale
    return uint64_t{n} * (cols / 32) * kGroupBytes;
}

void record_encode_input(Kernels& k, VkCommandBuffer cmd, ShaderWeightType type, VkBuffer x, VkBuffer encoded, uint32_t n,
                         uint32_t cols, bool barrier) {
    if (cols % 32 != 0 || (q8_k_input(type) && cols % 256 != 0)) {
        throw Error("internal: rows of " + std::to_string(cols) + " values cannot be encoded in whole blocks");
    }
    constexpr uint32_t kThreads = 64;  // encode_input.comp's, one per 32-value group
    const uint32_t push[2] = {n, cols};
    const auto [x_groups, y_groups] = k.fold_groups(groups(uint64_t{n} * (cols / 32), kThreads));
    k.dispatch(cmd, Shader::EncodeInput, k.matmul_spec(type), {x, encoded}, push, sizeof push, x_groups, y_groups, barrier);
}

void record_matmul(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer x, VkBuffer y, uint32_t n, uint32_t y_stride,
                   bool accumulate, bool barrier, VkBuffer encoded) {
    if (n <= kMatvecMaxTokens) {
        record_matvec(k, cmd, w, x, y, n, y_stride, accumulate, {}, barrier);
        return;
    }
    const bool reads_encoded = matmul_reads_encoded_input(k, w.type, n);
    if (reads_encoded && encoded == VK_NULL_HANDLE) {
        throw Error("internal: a product of " + std::to_string(n) + " tokens of encoded input was recorded without it");
    }
    for (const DeviceMatrix::Part& part : w.parts) {
        // The parts write disjoint columns: only the last needs the barrier.
        const bool last = &part == &w.parts.back();
        const uint32_t push[6] = {static_cast<uint32_t>(part.rows), static_cast<uint32_t>(w.cols), n, y_stride,
                                  static_cast<uint32_t>(part.row_begin), accumulate ? 1u : 0u};
        // matmul.comp has no encoding of the input: such products take the tiles from 9 tokens on.
        if (n >= Kernels::kTiledMinTokens || reads_encoded) {
            const Shader tiles = reads_encoded ? Shader::MatmulDotTiled : Shader::MatmulTiled;
            k.dispatch(cmd, tiles, k.matmul_spec(w.type), {part.buffer.handle(), reads_encoded ? encoded : x, y}, push,
                       sizeof push, groups(static_cast<uint64_t>(part.rows), Kernels::kTileRows), groups(n, Kernels::kTileTokens),
                       barrier && last);
        } else {
            k.dispatch(cmd, k.matmul_shader(), k.matmul_spec(w.type), {part.buffer.handle(), x, y}, push, sizeof push,
                       groups(static_cast<uint64_t>(part.rows), k.matmul_rows_per_group()), groups(n, Kernels::kMatmulTokens),
                       barrier && last);
        }
    }
}

void record_products(Kernels& k, VkCommandBuffer cmd, std::span<const Product> products, VkBuffer x, uint32_t n, VkBuffer encoded,
                     bool accumulate) {
    std::optional<ShaderWeightType> encoded_as;  // the weight type `encoded` holds the input for
    const auto reads_encoded = [&](size_t i) { return matmul_reads_encoded_input(k, products[i].w->type, n); };
    const auto needs_encoding = [&](size_t i) {
        return reads_encoded(i) && (!encoded_as || !encoding_serves(*encoded_as, products[i].w->type));
    };
    for (size_t i = 0; i < products.size(); ++i) {
        const DeviceMatrix& w = *products[i].w;
        if (needs_encoding(i)) {
            // The richest encoding among the later products that this one serves alike (Q8_1 over Q8_0).
            ShaderWeightType type = w.type;
            for (size_t later = i + 1; later < products.size(); ++later) {
                if (!reads_encoded(later)) continue;
                type = shared_input_encoding(type, products[later].w->type).value_or(type);
            }
            record_encode_input(k, cmd, type, x, encoded, n, static_cast<uint32_t>(w.cols));
            encoded_as = type;
        }
        // A barrier before `encoded` is written again, once the products that read it are done.
        const bool barrier = i + 1 == products.size() || (encoded_as && needs_encoding(i + 1));
        record_matmul(k, cmd, w, x, products[i].y, n, static_cast<uint32_t>(w.rows), accumulate, barrier, encoded);
    }
}

void record_embed(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& table, VkBuffer tokens, VkBuffer y, uint32_t n,
                  float scale) {
    for (const DeviceMatrix::Part& part : table.parts) {
        struct {
            uint32_t cols, n, row_begin, rows;
            float scale;
        } push{static_cast<uint32_t>(table.cols), n, static_cast<uint32_t>(part.row_begin), static_cast<uint32_t>(part.rows),
               scale};
        k.dispatch(cmd, Shader::Embed, k.matmul_spec(table.type), {part.buffer.handle(), tokens, y}, &push,
                   sizeof push, groups(static_cast<uint64_t>(table.cols), 64), n);
    }
}

void record_rms_norm(Kernels& k, VkCommandBuffer cmd, VkBuffer x, VkBuffer weight, VkBuffer y, VkBuffer row_map,
                     bool use_map, uint32_t n, uint32_t cols, float eps, NormOutput output, bool barrier) {
    struct {
        uint32_t cols;
        float eps;
        uint32_t use_map;
        uint32_t accumulate;
    } push{cols, eps, use_map ? 1u : 0u, output == NormOutput::AddTo ? 1u : 0u};
    k.dispatch(cmd, Shader::RmsNorm, {}, {x, weight, y, row_map}, &push, sizeof push, n, 1, barrier);
}

uint32_t qkv_prepare_flags(const QkvPrepare& op) {
    return (op.bias != VK_NULL_HANDLE ? 1u : 0u) | (op.q_norm ? 2u : 0u) | (op.k_norm ? 4u : 0u);
}

void record_qkv_prepare(Kernels& k, VkCommandBuffer cmd, const QkvPrepare& op, uint32_t n, bool barrier) {
    const uint32_t flags = qkv_prepare_flags(op);
    struct {
        uint32_t n_head, n_head_kv, head_dim, rope_dim, neox, flags;
        float eps;
        uint32_t block_tokens;
    } push{op.rope.n_heads, op.n_head_kv, op.rope.head_dim, op.rope.rope_dim, op.rope.neox ? 1u : 0u, flags, op.eps,
           op.block_tokens};
    // An absent bias or norm buffer is never read; q stands in for its binding.
    const VkBuffer bias = op.bias != VK_NULL_HANDLE ? op.bias : op.q;
    const VkBuffer norms = op.norms != VK_NULL_HANDLE ? op.norms : op.q;
    k.dispatch(cmd, Shader::QkvPrepare, {op.kv_f16 ? 1u : 0u},
               {op.q, op.k, op.v, bias, norms, op.positions, op.rope_table, op.slots, op.k_cache, op.v_cache}, &push,
               sizeof push, op.rope.n_heads + 2 * op.n_head_kv, n, barrier);
}

void record_gated_activation(Kernels& k, VkCommandBuffer cmd, VkBuffer gate, VkBuffer up, uint32_t count,
                             FfnActivation activation) {
    const uint32_t push[2] = {count, activation == FfnActivation::GeluTanh ? 1u : 0u};
    k.dispatch(cmd, Shader::Swiglu, {}, {gate, up}, push, sizeof push, groups(count, 256));
}

std::vector<float> rope_table(const RopeParams& rope, int n_positions) {
    const auto half = static_cast<size_t>(rope.rope_dim / 2);
    std::vector<float> cos(half), sin(half);
    std::vector<float> table(static_cast<size_t>(n_positions) * half * 2);
    for (int pos = 0; pos < n_positions; ++pos) {
        rope_angles(pos, rope, cos.data(), sin.data());
        for (size_t i = 0; i < half; ++i) {
            const size_t at = (static_cast<size_t>(pos) * half + i) * 2;
            table[at] = cos[i];
            table[at + 1] = sin[i];
        }
    }
    return table;
}

}  // namespace inferscope::gpu
