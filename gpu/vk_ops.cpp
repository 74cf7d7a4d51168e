#include "gpu/vk_ops.h"

#include <algorithm>
#include <string>

#include "engine/backend/rope.h"
#include "engine/core/error.h"
#include "engine/core/fp16.h"
#include "engine/formats/quant.h"

namespace inferscope::gpu {
namespace {

uint32_t groups(uint64_t items, uint32_t per_group) { return static_cast<uint32_t>((items + per_group - 1) / per_group); }

// Bytes of one row of `w` in the format it is uploaded as.
uint64_t device_row_bytes(const WeightMatrix& w, ShaderWeightType type) {
    return type == ShaderWeightType::F16 && w.type != GgmlType::F16 ? static_cast<uint64_t>(w.cols) * 2 : w.row_bytes;
}

// Rows [begin, begin + rows) of `w` in the uploaded format.
std::vector<uint8_t> device_rows(const WeightMatrix& w, ShaderWeightType type, int64_t begin, int64_t rows) {
    const uint64_t row_bytes = device_row_bytes(w, type);
    std::vector<uint8_t> bytes(row_bytes * static_cast<uint64_t>(rows));
    if (row_bytes == w.row_bytes) {
        std::copy(w.row(begin), w.row(begin) + bytes.size(), bytes.begin());
        return bytes;
    }
    std::vector<float> row(static_cast<size_t>(w.cols));
    auto* out = reinterpret_cast<uint16_t*>(bytes.data());
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(w.type, w.row(begin + r), row.data(), w.cols);
        for (int64_t c = 0; c < w.cols; ++c) out[r * w.cols + c] = fp32_to_fp16(row[static_cast<size_t>(c)]);
    }
    return bytes;
}

}  // namespace

uint64_t DeviceMatrix::bytes() const {
    uint64_t total = 0;
    for (const Part& p : parts) total += p.buffer.size_bytes();
    return total;
}

DeviceMatrix upload_matrix(VkContext& ctx, const WeightMatrix& w, uint64_t max_part_bytes) {
    DeviceMatrix m;
    m.type = shader_weight_type(w.type);
    m.rows = w.rows;
    m.cols = w.cols;
    const uint64_t row_bytes = device_row_bytes(w, m.type);
    const uint64_t max_bytes = max_part_bytes > 0 ? max_part_bytes : ctx.info().max_storage_buffer_range_bytes;
    if (row_bytes > max_bytes) {
        throw UnsupportedError("weight " + w.name + ": one row (" + std::to_string(row_bytes) +
                               " bytes) exceeds the device's largest storage binding");
    }
    const auto rows_per_part = static_cast<int64_t>(max_bytes / row_bytes);
    for (int64_t begin = 0; begin < w.rows; begin += rows_per_part) {
        const int64_t rows = std::min(rows_per_part, w.rows - begin);
        const std::vector<uint8_t> bytes = device_rows(w, m.type, begin, rows);
        DeviceMatrix::Part part{Buffer(ctx, bytes.size(), Buffer::Kind::Device), begin, rows};
        ctx.upload(part.buffer, 0, bytes.data(), bytes.size());
        m.parts.push_back(std::move(part));
    }
    return m;
}

Buffer upload_floats(VkContext& ctx, const std::vector<float>& values) {
    Buffer b(ctx, values.size() * sizeof(float), Buffer::Kind::Device);
    ctx.upload(b, 0, values.data(), values.size() * sizeof(float));
    return b;
}

void record_matmul(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer x, VkBuffer y, uint32_t n,
                   uint32_t y_stride, bool accumulate, bool barrier) {
    for (const DeviceMatrix::Part& part : w.parts) {
        // The parts write disjoint columns: only the last needs the barrier.
        const bool last = &part == &w.parts.back();
        const uint32_t push[6] = {static_cast<uint32_t>(part.rows), static_cast<uint32_t>(w.cols), n, y_stride,
                                  static_cast<uint32_t>(part.row_begin), accumulate ? 1u : 0u};
        if (n >= Kernels::kTiledMinTokens) {
            k.dispatch(cmd, Shader::MatmulTiled, static_cast<uint32_t>(w.type), {part.buffer.handle(), x, y}, push, sizeof push,
                       groups(static_cast<uint64_t>(part.rows), Kernels::kTileRows), groups(n, Kernels::kTileTokens),
                       barrier && last);
        } else {
            k.dispatch(cmd, k.matmul_shader(), static_cast<uint32_t>(w.type), {part.buffer.handle(), x, y}, push, sizeof push,
                       groups(static_cast<uint64_t>(part.rows), k.matmul_rows_per_group()), groups(n, Kernels::kMatmulTokens),
                       barrier && last);
        }
    }
}

void record_embed(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& table, VkBuffer tokens, VkBuffer y, uint32_t n) {
    for (const DeviceMatrix::Part& part : table.parts) {
        const uint32_t push[4] = {static_cast<uint32_t>(table.cols), n, static_cast<uint32_t>(part.row_begin),
                                  static_cast<uint32_t>(part.rows)};
        k.dispatch(cmd, Shader::Embed, static_cast<uint32_t>(table.type), {part.buffer.handle(), tokens, y}, push,
                   sizeof push, groups(static_cast<uint64_t>(table.cols), 64), n);
    }
}

void record_rms_norm(Kernels& k, VkCommandBuffer cmd, VkBuffer x, VkBuffer weight, VkBuffer y, VkBuffer row_map,
                     bool use_map, uint32_t n, uint32_t cols, float eps) {
    struct {
        uint32_t cols;
        float eps;
        uint32_t use_map;
    } push{cols, eps, use_map ? 1u : 0u};
    k.dispatch(cmd, Shader::RmsNorm, 0, {x, weight, y, row_map}, &push, sizeof push, n);
}

void record_rope(Kernels& k, VkCommandBuffer cmd, VkBuffer heads, VkBuffer positions, VkBuffer table, uint32_t n,
                 const RopeShape& shape, bool barrier) {
    const uint32_t push[5] = {n, shape.n_heads, shape.head_dim, shape.rope_dim, shape.neox ? 1u : 0u};
    const uint64_t pairs = static_cast<uint64_t>(n) * shape.n_heads * (shape.rope_dim / 2);
    k.dispatch(cmd, Shader::Rope, 0, {heads, positions, table}, push, sizeof push, groups(pairs, 64), 1, barrier);
}

void record_add(Kernels& k, VkCommandBuffer cmd, VkBuffer y, VkBuffer x, uint32_t count, uint32_t period, bool barrier) {
    const uint32_t push[2] = {count, period};
    k.dispatch(cmd, Shader::Add, 0, {y, x}, push, sizeof push, groups(count, 256), 1, barrier);
}

void record_swiglu(Kernels& k, VkCommandBuffer cmd, VkBuffer gate, VkBuffer up, uint32_t count) {
    const uint32_t push[1] = {count};
    k.dispatch(cmd, Shader::Swiglu, 0, {gate, up}, push, sizeof push, groups(count, 256));
}

std::vector<float> rope_table(const ModelConfig& c, const std::vector<float>& freq_factors, int n_positions) {
    const RopeParams rope = rope_params(c, freq_factors);
    const auto half = static_cast<size_t>(c.rope_dim / 2);
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
