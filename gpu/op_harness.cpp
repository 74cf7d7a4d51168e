#include "gpu/op_harness.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>

#include "engine/core/error.h"
#include "engine/core/fp16.h"
#include "gpu/vk_attention.h"
#include "gpu/vk_context.h"
#include "gpu/vk_kernels.h"
#include "gpu/vk_matvec.h"
#include "gpu/vk_ops.h"

namespace inferscope::gpu {

struct OpHarness::Impl {
    Impl(bool validation, uint32_t max_workgroups_x, const std::string& tuning, std::optional<bool> integer_dot)
        : ctx(ContextOptions{validation, max_workgroups_x}), kernels(ctx, kernel_tuning(ctx.info(), tuning, integer_dot)) {}

    template <typename T>
    Buffer device_copy(const std::vector<T>& values) {
        Buffer b(ctx, std::max<size_t>(values.size(), 1) * sizeof(T), Buffer::Kind::Device);
        ctx.upload(b, 0, values.data(), values.size() * sizeof(T));
        return b;
    }
    // Runs one recorded operation. Its buffers are freed after the call, and a later buffer
    // may get the same handle, so the descriptor sets that name them are dropped.
    void run(const std::function<void(VkCommandBuffer)>& record) {
        kernels.reset_counts();
        ctx.run_now(record);
        last_counts = kernels.counts();
        kernels.forget_descriptor_sets();
    }
    std::vector<float> read(const Buffer& b, size_t count) {
        std::vector<float> out(count);
        ctx.download(b, 0, out.data(), count * sizeof(float));
        return out;
    }
    // Room for the input of n tokens encoded for products of the widest of `weights`
    // (record_products); one word where none reads it encoded.
    Buffer encoded_input_buffer(std::span<const DeviceMatrix* const> weights, int64_t n) {
        uint64_t bytes = 4;
        for (const DeviceMatrix* w : weights) {
            if (matmul_reads_encoded_input(kernels, w->type, static_cast<uint32_t>(n))) {
                bytes = std::max(bytes, encoded_input_bytes(static_cast<uint32_t>(n), static_cast<uint32_t>(w->cols)));
            }
        }
        return Buffer(ctx, bytes, Buffer::Kind::Device);
    }

    // record_qkv_prepare's op over the device's q, k, v, its other inputs copied to the device
    // and its caches allocated.
    struct PrepareHostInputs {
        const std::vector<float>& bias;
        const std::vector<float>& q_norm;
        const std::vector<float>& k_norm;
        const std::vector<int32_t>& positions;
        const std::vector<int32_t>& slots;
    };
    struct Prepare {
        Prepare(Impl& m, std::array<VkBuffer, 3> qkv, const PrepareHostInputs& in, const RopeParams& rope,
                const QkvPrepareShape& shape);
        // Zeroes the caches, so that slots the step does not write read as 0.
        void zero_caches(Kernels& kernels, VkCommandBuffer cmd) const;
        // A cache read back as floats in its layout.
        std::vector<float> read_cache(Impl& m, const Buffer& cache) const;

        Buffer biases, norm_weights, positions, slots, table, k_cache, v_cache;
        size_t cache_elements = 0;
        bool kv_f16 = false;
        QkvPrepare op;
    };

    VkContext ctx;
    Kernels kernels;
    RecordCounts last_counts;  // of the last run
};

OpHarness::Impl::Prepare::Prepare(Impl& m, std::array<VkBuffer, 3> qkv, const PrepareHostInputs& in, const RopeParams& rope,
                                  const QkvPrepareShape& shape)
    : kv_f16(shape.kv_f16) {
    const auto kv_dim = static_cast<size_t>(shape.n_head_kv * shape.head_dim);
    cache_elements = static_cast<size_t>(shape.n_blocks * shape.block_tokens) * kv_dim;
    const size_t element_bytes = shape.kv_f16 ? sizeof(uint16_t) : sizeof(float);
    std::vector<float> norms = in.q_norm.empty() ? std::vector<float>(static_cast<size_t>(shape.head_dim), 0.0f) : in.q_norm;
    norms.insert(norms.end(), in.k_norm.begin(), in.k_norm.end());
    biases = m.device_copy(in.bias);
    norm_weights = m.device_copy(norms);
    positions = m.device_copy(in.positions);
    slots = m.device_copy(in.slots);
    table = m.device_copy(rope_table(rope, *std::max_element(in.positions.begin(), in.positions.end()) + 1));
    k_cache = Buffer(m.ctx, cache_elements * element_bytes, Buffer::Kind::Device);
    v_cache = Buffer(m.ctx, cache_elements * element_bytes, Buffer::Kind::Device);
    op.q = qkv[0];
    op.k = qkv[1];
    op.v = qkv[2];
    op.bias = in.bias.empty() ? VK_NULL_HANDLE : biases.handle();
    op.norms = in.q_norm.empty() && in.k_norm.empty() ? VK_NULL_HANDLE : norm_weights.handle();
    op.q_norm = !in.q_norm.empty();
    op.k_norm = !in.k_norm.empty();
    op.positions = positions.handle();
    op.rope_table = table.handle();
    op.slots = slots.handle();
    op.k_cache = k_cache.handle();
    op.v_cache = v_cache.handle();
    op.rope = {static_cast<uint32_t>(shape.n_head), static_cast<uint32_t>(shape.head_dim), static_cast<uint32_t>(rope.rope_dim),
               rope.style == RopeStyle::Neox};
    op.n_head_kv = static_cast<uint32_t>(shape.n_head_kv);
    op.eps = shape.eps;
    op.block_tokens = static_cast<uint32_t>(shape.block_tokens);
    op.kv_f16 = shape.kv_f16;
}

void OpHarness::Impl::Prepare::zero_caches(Kernels& kernels, VkCommandBuffer cmd) const {
    vkCmdFillBuffer(cmd, k_cache.handle(), 0, VK_WHOLE_SIZE, 0);
    vkCmdFillBuffer(cmd, v_cache.handle(), 0, VK_WHOLE_SIZE, 0);
    kernels.barrier(cmd);
}

std::vector<float> OpHarness::Impl::Prepare::read_cache(Impl& m, const Buffer& cache) const {
    if (!kv_f16) return m.read(cache, cache_elements);
    std::vector<uint16_t> bits(cache_elements);
    m.ctx.download(cache, 0, bits.data(), cache_elements * sizeof(uint16_t));
    std::vector<float> out(cache_elements);
    std::transform(bits.begin(), bits.end(), out.begin(), fp16_to_fp32);
    return out;
}

namespace {

// Stores keys and values [n x kv_dim] in the paged caches at slots[i]: record_qkv_prepare with
// no query heads, biases, norms or rotation, so nothing but the store runs.
void record_cache_store(Kernels& kernels, VkCommandBuffer cmd, const Buffer& keys, const Buffer& values, const Buffer& slots,
                        const Buffer& k_cache, const Buffer& v_cache, uint32_t n, const AttentionParams& params) {
    QkvPrepare op;
    op.q = keys.handle();  // no query heads: never read
    op.k = keys.handle();
    op.v = values.handle();
    op.positions = slots.handle();  // not read without rotation, nor the table
    op.rope_table = slots.handle();
    op.slots = slots.handle();
    op.k_cache = k_cache.handle();
    op.v_cache = v_cache.handle();
    op.rope = RopeShape{0, params.head_dim, 0, false};
    op.n_head_kv = params.n_head_kv;
    op.block_tokens = params.block_tokens;
    op.kv_f16 = params.kv_f16;
    record_qkv_prepare(kernels, cmd, op, n);
}

}  // namespace

OpHarness::OpHarness(bool validation, uint32_t max_workgroups_x, const std::string& tuning, std::optional<bool> integer_dot)
    : impl_(std::make_unique<Impl>(validation, max_workgroups_x, tuning, integer_dot)) {}
OpHarness::~OpHarness() = default;

std::string OpHarness::device_name() const { return impl_->ctx.info().name; }
int OpHarness::validation_errors() const { return impl_->ctx.validation_errors(); }
uint32_t OpHarness::last_dispatches() const { return impl_->last_counts.dispatches; }
bool OpHarness::integer_dot() const { return impl_->kernels.integer_dot(); }
bool OpHarness::matvec_uses_integer_dot(GgmlType type, int64_t cols, int64_t n) const {
    return gpu::matvec_uses_integer_dot(impl_->kernels, shader_weight_type(type), static_cast<uint32_t>(cols),
                                        static_cast<uint32_t>(n));
}

std::vector<float> OpHarness::matmul(const WeightMatrix& w, const std::vector<float>& x, int64_t n, uint64_t max_part_bytes) {
    return products({&w}, x, n, max_part_bytes).front();
}

std::vector<std::vector<float>> OpHarness::products(const std::vector<const WeightMatrix*>& ws, const std::vector<float>& x,
                                                    int64_t n, uint64_t max_part_bytes) {
    Impl& m = *impl_;
    BufferArena arena(m.ctx, 0);
    std::vector<DeviceMatrix> weights;
    std::vector<Buffer> outputs;
    for (const WeightMatrix* w : ws) {
        weights.push_back(upload_matrix(m.ctx, arena, *w, max_part_bytes));
        outputs.emplace_back(m.ctx, static_cast<uint64_t>(n * w->rows) * sizeof(float), Buffer::Kind::Device);
    }
    std::vector<const DeviceMatrix*> matrices;
    std::vector<Product> products;
    for (size_t i = 0; i < ws.size(); ++i) {
        matrices.push_back(&weights[i]);
        products.push_back({&weights[i], outputs[i].handle()});
    }
    const Buffer input = m.device_copy(x);
    const Buffer encoded = m.encoded_input_buffer(matrices, n);
    m.run([&](VkCommandBuffer cmd) {
        record_products(m.kernels, cmd, products, input.handle(), static_cast<uint32_t>(n), encoded.handle());
    });
    std::vector<std::vector<float>> ys;
    for (size_t i = 0; i < ws.size(); ++i) ys.push_back(m.read(outputs[i], static_cast<size_t>(n * ws[i]->rows)));
    return ys;
}

std::vector<float> OpHarness::embed(const WeightMatrix& table, const std::vector<int32_t>& tokens, uint64_t max_part_bytes,
                                    float scale) {
    Impl& m = *impl_;
    BufferArena arena(m.ctx, 0);
    const DeviceMatrix weights = upload_matrix(m.ctx, arena, table, max_part_bytes);
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

QkvPrepared OpHarness::qkv_prepare(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                   const std::vector<float>& bias, const std::vector<float>& q_norm,
                                   const std::vector<float>& k_norm, const std::vector<int32_t>& positions,
                                   const std::vector<int32_t>& slots, const RopeParams& rope, const QkvPrepareShape& shape) {
    Impl& m = *impl_;
    const Buffer queries = m.device_copy(q), keys = m.device_copy(k), values = m.device_copy(v);
    const Impl::Prepare prepare(m, {queries.handle(), keys.handle(), values.handle()}, {bias, q_norm, k_norm, positions, slots},
                                rope, shape);
    m.run([&](VkCommandBuffer cmd) {
        prepare.zero_caches(m.kernels, cmd);
        record_qkv_prepare(m.kernels, cmd, prepare.op, static_cast<uint32_t>(positions.size()));
    });
    return {m.read(queries, q.size()), prepare.read_cache(m, prepare.k_cache), prepare.read_cache(m, prepare.v_cache)};
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
        record_cache_store(m.kernels, cmd, keys, values, slot, k_cache, v_cache, n, params);
        // One split: the partials and counters are not read, any buffer serves.
        const AttentionBuffers buffers{queries.handle(),     k_cache.handle(), v_cache.handle(), tables.handle(), pos.handle(),
                                       table_start.handle(), output.handle(),  output.handle(),  output.handle()};
        record_attention_split(m.kernels, cmd, buffers, n, params, 1, true, AttentionBuild::Auto,
                               gpu::attention_tile_tokens(m.kernels, params.n_head / params.n_head_kv, params.head_dim));
    });
    return m.read(output, q.size());
}

namespace {

// The output buffer of a product: y_initial's values, or zeros.
Buffer output_buffer(VkContext& ctx, const std::vector<float>& y_initial, size_t count) {
    const std::vector<float> values = y_initial.empty() ? std::vector<float>(count, 0.0f) : y_initial;
    Buffer b(ctx, std::max<size_t>(count, 1) * sizeof(float), Buffer::Kind::Device);
    ctx.upload(b, 0, values.data(), count * sizeof(float));
    return b;
}

}  // namespace

QkvPrepared OpHarness::qkv_product_prepared(const std::vector<const WeightMatrix*>& ws, const std::vector<float>& x,
                                            const std::vector<float>& norm_weight, const std::vector<float>& bias,
                                            const std::vector<float>& q_norm, const std::vector<float>& k_norm,
                                            const std::vector<int32_t>& positions, const std::vector<int32_t>& slots,
                                            const RopeParams& rope, const QkvPrepareShape& shape, bool fused, int calls) {
    Impl& m = *impl_;
    const auto n = static_cast<uint32_t>(positions.size());
    BufferArena arena(m.ctx, 0);
    std::vector<DeviceMatrix> weights;
    std::vector<Buffer> outputs;
    std::vector<const DeviceMatrix*> matrices;
    std::vector<VkBuffer> ys;
    for (const WeightMatrix* w : ws) {
        weights.push_back(upload_matrix(m.ctx, arena, *w));
        outputs.push_back(output_buffer(m.ctx, {}, static_cast<size_t>(n * w->rows)));
    }
    for (size_t i = 0; i < ws.size(); ++i) {
        matrices.push_back(&weights[i]);
        ys.push_back(outputs[i].handle());
    }
    const Buffer input = m.device_copy(x), norm = m.device_copy(norm_weight);
    const Buffer counters = finish_counters(m.ctx, static_cast<uint64_t>(shape.n_head + 2 * shape.n_head_kv));
    const Impl::Prepare prepare(m, {ys[0], ys[1], ys[2]}, {bias, q_norm, k_norm, positions, slots}, rope, shape);
    const MatvecNorm fused_norm{norm.handle(), shape.eps};
    if (fused && !matvec_prepares_qkv(m.kernels, matrices, prepare.op)) {
        throw Error("qkv_product_prepared: these matrices cannot be prepared in their product's dispatch here");
    }
    m.run([&](VkCommandBuffer cmd) {
        prepare.zero_caches(m.kernels, cmd);
        if (!fused) {
            record_matvec_multi(m.kernels, cmd, matrices, input.handle(), ys, n, fused_norm);
            record_qkv_prepare(m.kernels, cmd, prepare.op, n);
            return;
        }
        for (int i = 0; i < calls; ++i) {
            record_matvec_qkv_prepared(m.kernels, cmd, matrices, input.handle(), n, fused_norm, prepare.op, counters.handle());
        }
    });
    return {m.read(outputs[0], static_cast<size_t>(n * ws[0]->rows)), prepare.read_cache(m, prepare.k_cache),
            prepare.read_cache(m, prepare.v_cache)};
}

std::vector<float> OpHarness::matvec(const WeightMatrix& w, const std::vector<float>& x, int64_t n,
                                     const MatvecOptions& options) {
    Impl& m = *impl_;
    BufferArena arena(m.ctx, 0);
    const DeviceMatrix weights = upload_matrix(m.ctx, arena, w, options.max_part_bytes);
    const Buffer input = m.device_copy(x);
    const Buffer norm = m.device_copy(options.norm_weight);
    const auto count = static_cast<size_t>(n * w.rows);
    const Buffer output = output_buffer(m.ctx, options.y_initial, count);
    const MatvecNorm fused{options.norm_weight.empty() ? VK_NULL_HANDLE : norm.handle(), options.eps};
    m.run([&](VkCommandBuffer cmd) {
        record_matvec(m.kernels, cmd, weights, input.handle(), output.handle(), static_cast<uint32_t>(n),
                      static_cast<uint32_t>(w.rows), options.accumulate, fused);
    });
    return m.read(output, count);
}

std::vector<float> OpHarness::matvec_post_normed(const WeightMatrix& w, const std::vector<float>& x, int64_t n,
                                                 const std::vector<float>& residual, const std::vector<float>& post_weight,
                                                 float eps, int calls) {
    Impl& m = *impl_;
    BufferArena arena(m.ctx, 0);
    const DeviceMatrix weights = upload_matrix(m.ctx, arena, w);
    const Buffer input = m.device_copy(x), weight = m.device_copy(post_weight);
    const auto count = static_cast<size_t>(n * w.rows);
    const Buffer projected = output_buffer(m.ctx, {}, count), sum = output_buffer(m.ctx, residual, count);
    const Buffer counter = finish_counters(m.ctx, 1);
    const MatvecPostNorm post{weight.handle(), eps, sum.handle(), counter.handle()};
    m.run([&](VkCommandBuffer cmd) {
        for (int i = 0; i < calls; ++i) {
            record_matvec_post_normed(m.kernels, cmd, weights, input.handle(), projected.handle(), static_cast<uint32_t>(n),
                                      post);
        }
    });
    return m.read(sum, count);
}

std::vector<std::vector<float>> OpHarness::matvec_multi(const std::vector<const WeightMatrix*>& ws, const std::vector<float>& x,
                                                        int64_t n, const MatvecOptions& options) {
    Impl& m = *impl_;
    BufferArena arena(m.ctx, 0);
    std::vector<DeviceMatrix> weights;
    std::vector<Buffer> outputs;
    for (const WeightMatrix* w : ws) {
        weights.push_back(upload_matrix(m.ctx, arena, *w, options.max_part_bytes));
        outputs.push_back(output_buffer(m.ctx, {}, static_cast<size_t>(n * w->rows)));
    }
    std::vector<const DeviceMatrix*> matrices;
    std::vector<VkBuffer> ys;
    for (size_t i = 0; i < ws.size(); ++i) {
        matrices.push_back(&weights[i]);
        ys.push_back(outputs[i].handle());
    }
    const Buffer input = m.device_copy(x);
    const Buffer norm = m.device_copy(options.norm_weight);
    const MatvecNorm fused{options.norm_weight.empty() ? VK_NULL_HANDLE : norm.handle(), options.eps};
    m.run([&](VkCommandBuffer cmd) {
        record_matvec_multi(m.kernels, cmd, matrices, input.handle(), ys, static_cast<uint32_t>(n), fused);
    });
    std::vector<std::vector<float>> results;
    for (size_t i = 0; i < ws.size(); ++i) results.push_back(m.read(outputs[i], static_cast<size_t>(n * ws[i]->rows)));
    return results;
}

std::vector<float> OpHarness::matvec_gated(const WeightMatrix& gate, const WeightMatrix& up, const std::vector<float>& x,
                                           int64_t n, FfnActivation activation, const MatvecOptions& options) {
    Impl& m = *impl_;
    BufferArena arena(m.ctx, 0);
    const DeviceMatrix g = upload_matrix(m.ctx, arena, gate, options.max_part_bytes);
    const DeviceMatrix u = upload_matrix(m.ctx, arena, up, options.max_part_bytes);
    const Buffer input = m.device_copy(x);
    const Buffer norm = m.device_copy(options.norm_weight);
    const auto count = static_cast<size_t>(n * gate.rows);
    const Buffer output = output_buffer(m.ctx, {}, count);
    const MatvecNorm fused{options.norm_weight.empty() ? VK_NULL_HANDLE : norm.handle(), options.eps};
    m.run([&](VkCommandBuffer cmd) {
        record_matvec_gated(m.kernels, cmd, g, u, input.handle(), output.handle(), static_cast<uint32_t>(n), activation, fused);
    });
    return m.read(output, count);
}

bool OpHarness::has_timestamps() const { return impl_->ctx.info().timestamps && impl_->ctx.timestamp_period_ns() > 0; }

namespace {

// One call of `kernel` over `weights` (inputs x, outputs ys[i] per matrix), ending with a barrier;
// `encoded`: room for x encoded (record_products).
void record_kernel_call(Kernels& k, VkCommandBuffer cmd, const std::vector<const DeviceMatrix*>& weights, VkBuffer x,
                        const std::vector<VkBuffer>& ys, uint32_t n, OpHarness::ProductKernel kernel, VkBuffer encoded) {
    using Kind = OpHarness::ProductKernel;
    switch (kernel) {
        case Kind::Matmul: {
            std::vector<Product> products;
            for (size_t i = 0; i < weights.size(); ++i) products.push_back({weights[i], ys[i]});
            record_products(k, cmd, products, x, n, encoded);
            // The unfused FFN: the activation is a dispatch of its own.
            if (weights.size() == 2) {
                record_gated_activation(k, cmd, ys[0], ys[1], n * static_cast<uint32_t>(weights[0]->rows), FfnActivation::Silu);
            }
            break;
        }
        case Kind::Matvec:
            for (size_t i = 0; i < weights.size(); ++i) {
                const bool last = i + 1 == weights.size();
                record_matvec(k, cmd, *weights[i], x, ys[i], n, static_cast<uint32_t>(weights[i]->rows), false, {}, last);
            }
            break;
        case Kind::MatvecMulti:
            record_matvec_multi(k, cmd, weights, x, ys, n);
            break;
        case Kind::MatvecGated:
            record_matvec_gated(k, cmd, *weights[0], *weights[1], x, ys[0], n, FfnActivation::Silu);
            break;
    }
}

}  // namespace

std::vector<std::vector<double>> OpHarness::time_products(const std::vector<const WeightMatrix*>& ws,
                                                          const std::vector<ProductKernel>& kernels,
                                                          const std::vector<int64_t>& token_counts, int reps) {
    if (!has_timestamps()) return {};
    Impl& m = *impl_;
    const int64_t max_tokens = *std::max_element(token_counts.begin(), token_counts.end());
    BufferArena arena(m.ctx, 0);
    std::vector<DeviceMatrix> weights;
    std::vector<Buffer> outputs;
    for (const WeightMatrix* w : ws) {
        weights.push_back(upload_matrix(m.ctx, arena, *w));
        outputs.push_back(output_buffer(m.ctx, {}, static_cast<size_t>(max_tokens * w->rows)));
    }
    std::vector<const DeviceMatrix*> matrices;
    std::vector<VkBuffer> ys;
    for (size_t i = 0; i < ws.size(); ++i) {
        matrices.push_back(&weights[i]);
        ys.push_back(outputs[i].handle());
    }
    const Buffer input = m.device_copy(std::vector<float>(static_cast<size_t>(max_tokens * ws[0]->cols), 0.01f));
    const Buffer encoded = m.encoded_input_buffer(matrices, max_tokens);
    std::vector<std::vector<double>> times(kernels.size());
    for (size_t i = 0; i < kernels.size(); ++i) {
        for (int64_t n : token_counts) {
            const auto record = [&](VkCommandBuffer cmd) {
                record_kernel_call(m.kernels, cmd, matrices, input.handle(), ys, static_cast<uint32_t>(n), kernels[i],
                                   encoded.handle());
            };
            times[i].push_back(m.ctx.time_calls_us(record, reps));
        }
    }
    m.kernels.forget_descriptor_sets();
    return times;
}

std::vector<float> OpHarness::attention_batch(const std::vector<float>& q, const std::vector<AttentionSequence>& sequences,
                                              const AttentionShape& shape, uint32_t splits, bool shared_memory_build,
                                              uint32_t tile_tokens) {
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
    // NaN where no split has written yet: a combine that reads a split before it is written fails.
    const Buffer partials =
        m.device_copy(std::vector<float>(attention_partials_bytes(n, params.n_head, params.head_dim, splits) / sizeof(float),
                                         std::numeric_limits<float>::quiet_NaN()));
    const Buffer counters = finish_counters(m.ctx, attention_split_counter_count(n, params.n_head));
    const Buffer output(m.ctx, q.size() * sizeof(float), Buffer::Kind::Device);
    const AttentionBuffers buffers{queries.handle(), k_cache.handle(),  v_cache.handle(),  table.handle(), pos.handle(),
                                   starts.handle(),  partials.handle(), counters.handle(), output.handle()};
    m.run([&](VkCommandBuffer cmd) {
        record_cache_store(m.kernels, cmd, key_rows, value_rows, slot, k_cache, v_cache, n_rows, params);
        record_attention_split(m.kernels, cmd, buffers, n, params, splits, true,
                               shared_memory_build ? AttentionBuild::SharedMemory : AttentionBuild::Auto, tile_tokens);
    });
    return m.read(output, q.size());
}

uint32_t OpHarness::attention_tile_tokens(uint32_t group_heads, uint32_t head_dim) const {
    return gpu::attention_tile_tokens(impl_->kernels, group_heads, head_dim);
}

}  // namespace inferscope::gpu
