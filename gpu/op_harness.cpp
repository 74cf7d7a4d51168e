#include "gpu/op_harness.h"

#include <algorithm>
#include <functional>

#include "gpu/vk_attention.h"
#include "gpu/vk_context.h"
#include "gpu/vk_kernels.h"
#include "gpu/vk_ops.h"

namespace inferscope::gpu {

struct OpHarness::Impl {
    Impl(bool validation, uint32_t max_workgroups_x) : ctx(ContextOptions{validation, max_workgroups_x}), kernels(ctx) {}

    template <typename T>
    Buffer device_copy(const std::vector<T>& values) {
        Buffer b(ctx, std::max<size_t>(values.size(), 1) * sizeof(T), Buffer::Kind::Device);
        ctx.upload(b, 0, values.data(), values.size() * sizeof(T));
        return b;
    }
    // Runs one recorded operation. Its buffers are freed after the call, and a later buffer
    // may get the same handle, so the descriptor sets that name them are dropped.
    void run(const std::function<void(VkCommandBuffer)>& record) {
        ctx.run_now(record);
        kernels.forget_descriptor_sets();
    }
    std::vector<float> read(const Buffer& b, size_t count) {
        std::vector<float> out(count);
        ctx.download(b, 0, out.data(), count * sizeof(float));
        return out;
    }

    VkContext ctx;
    Kernels kernels;
};

OpHarness::OpHarness(bool validation, uint32_t max_workgroups_x) : impl_(std::make_unique<Impl>(validation, max_workgroups_x)) {}
OpHarness::~OpHarness() = default;

std::string OpHarness::device_name() const { return impl_->ctx.info().name; }
int OpHarness::validation_errors() const { return impl_->ctx.validation_errors(); }

std::vector<float> OpHarness::matmul(const WeightMatrix& w, const std::vector<float>& x, int64_t n, uint64_t max_part_bytes) {
    Impl& m = *impl_;
    const DeviceMatrix weights = upload_matrix(m.ctx, w, max_part_bytes);
    const Buffer input = m.device_copy(x);
    const Buffer output(m.ctx, static_cast<uint64_t>(n * w.rows) * sizeof(float), Buffer::Kind::Device);
    m.run([&](VkCommandBuffer cmd) {
        record_matmul(m.kernels, cmd, weights, input.handle(), output.handle(), static_cast<uint32_t>(n),
                      static_cast<uint32_t>(w.rows), false);
    });
    return m.read(output, static_cast<size_t>(n * w.rows));
}

std::vector<float> OpHarness::embed(const WeightMatrix& table, const std::vector<int32_t>& tokens, uint64_t max_part_bytes,
                                    float scale) {
    Impl& m = *impl_;
    const DeviceMatrix weights = upload_matrix(m.ctx, table, max_part_bytes);
    const Buffer ids = m.device_copy(tokens);
    const size_t count = tokens.size() * static_cast<size_t>(table.cols);
    const Buffer output(m.ctx, count * sizeof(float), Buffer::Kind::Device);
    m.run([&](VkCommandBuffer cmd) {
        record_embed(m.kernels, cmd, weights, ids.handle(), output.handle(), static_cast<uint32_t>(tokens.size()), scale);
    });
    return m.read(output, count);
}

std::vector<float> OpHarness::rms_norm(const std::vector<float>& x, const std::vector<float>& weight, float eps) {
    Impl& m = *impl_;
    const Buffer input = m.device_copy(x);
    const Buffer scale = m.device_copy(weight);
    const Buffer output(m.ctx, x.size() * sizeof(float), Buffer::Kind::Device);
    const auto rows = static_cast<uint32_t>(x.size() / weight.size());
    m.run([&](VkCommandBuffer cmd) {
        record_rms_norm(m.kernels, cmd, input.handle(), scale.handle(), output.handle(), input.handle(), false, rows,
                        static_cast<uint32_t>(weight.size()), eps);
    });
    return m.read(output, x.size());
}

std::vector<float> OpHarness::head_norm(const std::vector<float>& heads, const std::vector<float>& weight, float eps) {
    Impl& m = *impl_;
    const Buffer data = m.device_copy(heads);
    const Buffer scale = m.device_copy(weight);
    m.run([&](VkCommandBuffer cmd) {
        record_head_norm(m.kernels, cmd, data.handle(), scale.handle(), static_cast<uint32_t>(heads.size() / weight.size()),
                         static_cast<uint32_t>(weight.size()), eps);
    });
    return m.read(data, heads.size());
}

std::vector<float> OpHarness::rope(const std::vector<float>& heads, const std::vector<int32_t>& positions,
                                   const RopeParams& rope, int n_heads, int head_dim) {
    Impl& m = *impl_;
    const int n_positions = *std::max_element(positions.begin(), positions.end()) + 1;
    const Buffer data = m.device_copy(heads);
    const Buffer pos = m.device_copy(positions);
    const Buffer table = m.device_copy(rope_table(rope, n_positions));
    const RopeShape shape{static_cast<uint32_t>(n_heads), static_cast<uint32_t>(head_dim),
                          static_cast<uint32_t>(rope.rope_dim), rope.style == RopeStyle::Neox};
    m.run([&](VkCommandBuffer cmd) {
        record_rope(m.kernels, cmd, data.handle(), pos.handle(), table.handle(), static_cast<uint32_t>(positions.size()),
                    shape);
    });
    return m.read(data, heads.size());
}

std::vector<float> OpHarness::gated_activation(const std::vector<float>& gate, const std::vector<float>& up,
                                               FfnActivation activation) {
    Impl& m = *impl_;
    const Buffer g = m.device_copy(gate);
    const Buffer u = m.device_copy(up);
    m.run([&](VkCommandBuffer cmd) {
        record_gated_activation(m.kernels, cmd, g.handle(), u.handle(), static_cast<uint32_t>(gate.size()), activation);
    });
    return m.read(g, gate.size());
}

std::vector<float> OpHarness::attention(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, const AttentionShape& shape) {
    Impl& m = *impl_;
    const auto kv_dim = static_cast<uint32_t>(shape.n_head_kv * shape.head_dim);
    const auto n = static_cast<uint32_t>(k.size() / kv_dim);
    const auto block_tokens = static_cast<uint32_t>(shape.block_tokens);
    std::vector<int32_t> positions(n), slots(n);
    for (uint32_t i = 0; i < n; ++i) {
        positions[i] = static_cast<int32_t>(i);
        slots[i] = shape.block_table[i / block_tokens] * static_cast<int32_t>(block_tokens) + static_cast<int32_t>(i % block_tokens);
    }
    const int32_t n_blocks = *std::max_element(shape.block_table.begin(), shape.block_table.end()) + 1;
    const uint64_t cache_bytes =
        static_cast<uint64_t>(n_blocks) * block_tokens * kv_dim * (shape.kv_f16 ? sizeof(uint16_t) : sizeof(float));
    const Buffer queries = m.device_copy(q), keys = m.device_copy(k), values = m.device_copy(v);
    const Buffer k_cache(m.ctx, cache_bytes, Buffer::Kind::Device), v_cache(m.ctx, cache_bytes, Buffer::Kind::Device);
    const Buffer pos = m.device_copy(positions), slot = m.device_copy(slots), tables = m.device_copy(shape.block_table);
    const Buffer table_start = m.device_copy(std::vector<int32_t>(n, 0));
    const Buffer output(m.ctx, q.size() * sizeof(float), Buffer::Kind::Device);
    const AttentionParams params{static_cast<uint32_t>(shape.n_head), static_cast<uint32_t>(shape.n_head_kv),
                                 static_cast<uint32_t>(shape.head_dim), block_tokens, shape.scale,
                                 static_cast<uint32_t>(shape.window), shape.kv_f16};
    m.run([&](VkCommandBuffer cmd) {
        record_kv_write(m.kernels, cmd, keys.handle(), values.handle(), k_cache.handle(), v_cache.handle(), slot.handle(), n,
                        kv_dim, block_tokens, shape.kv_f16);
        record_attention(m.kernels, cmd, queries.handle(), k_cache.handle(), v_cache.handle(), tables.handle(), pos.handle(),
                         table_start.handle(), output.handle(), n, params);
    });
    return m.read(output, q.size());
}

std::vector<float> OpHarness::add(const std::vector<float>& y, const std::vector<float>& x) {
    Impl& m = *impl_;
    const Buffer target = m.device_copy(y);
    const Buffer addend = m.device_copy(x);
    m.run([&](VkCommandBuffer cmd) {
        record_add(m.kernels, cmd, target.handle(), addend.handle(), static_cast<uint32_t>(y.size()),
                   static_cast<uint32_t>(x.size()));
    });
    return m.read(target, y.size());
}

std::vector<float> OpHarness::attention_batch(const std::vector<float>& q, const std::vector<AttentionSequence>& sequences,
                                              const AttentionShape& shape, uint32_t splits, bool shared_memory_build) {
    Impl& m = *impl_;
    const auto kv_dim = static_cast<uint32_t>(shape.n_head_kv * shape.head_dim);
    const auto block_tokens = static_cast<uint32_t>(shape.block_tokens);
    // Every sequence's K/V rows and slots, its table appended to the concatenated tables, and
    // per querying position its position and where its table starts.
    std::vector<float> keys, values;
    std::vector<int32_t> slots, tables, positions, table_start;
    int32_t n_blocks = 1;
    for (const AttentionSequence& seq : sequences) {
        const auto length = static_cast<int32_t>(seq.k.size() / kv_dim);
        keys.insert(keys.end(), seq.k.begin(), seq.k.end());
        values.insert(values.end(), seq.v.begin(), seq.v.end());
        for (int32_t i = 0; i < length; ++i) {
            slots.push_back(seq.block_table[static_cast<size_t>(i) / block_tokens] * static_cast<int32_t>(block_tokens) +
                            i % static_cast<int32_t>(block_tokens));
        }
        for (int32_t i = length - seq.n_query; i < length; ++i) {
            positions.push_back(i);
            table_start.push_back(static_cast<int32_t>(tables.size()));
        }
        tables.insert(tables.end(), seq.block_table.begin(), seq.block_table.end());
        n_blocks = std::max(n_blocks, *std::max_element(seq.block_table.begin(), seq.block_table.end()) + 1);
    }
    const auto n_rows = static_cast<uint32_t>(slots.size());
    const auto n = static_cast<uint32_t>(positions.size());
    const uint64_t cache_bytes =
        static_cast<uint64_t>(n_blocks) * block_tokens * kv_dim * (shape.kv_f16 ? sizeof(uint16_t) : sizeof(float));
    const Buffer queries = m.device_copy(q), key_rows = m.device_copy(keys), value_rows = m.device_copy(values);
    const Buffer k_cache(m.ctx, cache_bytes, Buffer::Kind::Device), v_cache(m.ctx, cache_bytes, Buffer::Kind::Device);
    const Buffer slot = m.device_copy(slots), table = m.device_copy(tables), pos = m.device_copy(positions);
    const Buffer starts = m.device_copy(table_start);
    const AttentionParams params{static_cast<uint32_t>(shape.n_head),
                                 static_cast<uint32_t>(shape.n_head_kv),
                                 static_cast<uint32_t>(shape.head_dim),
                                 block_tokens,
                                 shape.scale,
                                 static_cast<uint32_t>(shape.window),
                                 shape.kv_f16};
    const Buffer partials(m.ctx, attention_partials_bytes(n, params.n_head, params.head_dim, std::max<uint32_t>(splits, 1)),
                          Buffer::Kind::Device);
    const Buffer output(m.ctx, q.size() * sizeof(float), Buffer::Kind::Device);
    m.run([&](VkCommandBuffer cmd) {
        record_kv_write(m.kernels, cmd, key_rows.handle(), value_rows.handle(), k_cache.handle(), v_cache.handle(), slot.handle(),
                        n_rows, kv_dim, block_tokens, shape.kv_f16);
        if (splits == 0) {
            record_attention(m.kernels, cmd, queries.handle(), k_cache.handle(), v_cache.handle(), table.handle(), pos.handle(),
                             starts.handle(), output.handle(), n, params);
        } else {
            record_attention_split(m.kernels, cmd, queries.handle(), k_cache.handle(), v_cache.handle(), table.handle(),
                                   pos.handle(), starts.handle(), partials.handle(), output.handle(), n, params, splits, true,
                                   shared_memory_build ? AttentionBuild::SharedMemory : AttentionBuild::Auto);
        }
    });
    return m.read(output, q.size());
}

}  // namespace inferscope::gpu
