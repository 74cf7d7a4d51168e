#pragma once
// Device-resident weights and the recording of each forward-pass operation; shared by the
// backend and the per-op consistency tests (through gpu/op_harness.h).
#include <vulkan/vulkan.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/backend/rope.h"
#include "engine/model/model.h"
#include "gpu/vk_arena.h"
#include "gpu/vk_context.h"
#include "gpu/vk_kernels.h"

namespace inferscope::gpu {

// A weight matrix on the device in a shader-readable format, split by rows into buffers no
// larger than the device's maxStorageBufferRange (one dispatch per part).
struct DeviceMatrix {
    struct Part {
        Buffer buffer;
        int64_t row_begin = 0;
        int64_t rows = 0;
    };
    ShaderWeightType type = ShaderWeightType::F32;
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<Part> parts;
    uint64_t bytes() const;
};

// Uploads `w` once: in its own format when a shader reads it (shader_weight_type), else
// converted to F16, in parts of at most `max_part_bytes` (0: the device's
// maxStorageBufferRange), placed in `arena`. UnsupportedError when a single row exceeds a part.
DeviceMatrix upload_matrix(VkContext& ctx, BufferArena& arena, const WeightMatrix& w, uint64_t max_part_bytes = 0);
// The device bytes upload_matrix would take for `w`.
uint64_t device_matrix_bytes(const WeightMatrix& w);
// `count` zeroed uint32 counters of their own, for kernels whose last workgroup to finish
// does the dispatch's final step (shaders/finish_counter.glsl: split attention's combine, the
// mat-vec's post-norm): each dispatch leaves its counters zero, so the buffer serves every
// later dispatch.
Buffer finish_counters(VkContext& ctx, uint64_t count);
// A device buffer holding `values` (F32): placed in `arena` (a weight), or an allocation of its
// own (a table that is reallocated as it grows).
Buffer upload_floats(VkContext& ctx, BufferArena& arena, const std::vector<float>& values);
Buffer upload_floats(VkContext& ctx, const std::vector<float>& values);

struct RopeShape {
    uint32_t n_heads = 0;
    uint32_t head_dim = 0;
    uint32_t rope_dim = 0;
    bool neox = false;
};

// Each records one operation into `cmd` (followed by a barrier); `n` is the token count.
// y[n x y_stride] (+)= x[n x cols] * W^T, W's rows landing at columns y_offset...; up to
// kMatvecMaxTokens tokens through matvec.comp, up to 15 through matmul.comp, more tiled. Where
// the input is encoded (Kernels::encodes_input) there are tiles from kMatvecMaxTokens + 1 tokens
// on, and they read `encoded`: x encoded for w's type by record_encode_input (required then,
// else ignored; matmul_reads_encoded_input says when).
// `barrier` false: no barrier after it (the next product is independent: q/k/v, gate/up).
void record_matmul(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer x, VkBuffer y, uint32_t n, uint32_t y_stride,
                   bool accumulate, bool barrier = true, VkBuffer encoded = VK_NULL_HANDLE);
// Whether record_matmul of `type` weights for n tokens reads its input encoded.
bool matmul_reads_encoded_input(const Kernels& k, ShaderWeightType type, uint32_t n);
// Whether products of `type` weights can read an input encoded for `encoded` weights: the same
// encoding, or Q8_1 for Q8_0 (Q8_1 holds Q8_0's codes and scale, and adds its code-sum scales).
bool encoding_serves(ShaderWeightType encoded, ShaderWeightType type);
// The type whose input encoding serves products of both a and b (the one of Q8_1 beside Q8_0),
// none where they encode differently (F32/F16 weights, Q8_K beside Q8_0).
std::optional<ShaderWeightType> shared_input_encoding(ShaderWeightType a, ShaderWeightType b);
// The bytes record_encode_input writes for n rows of cols values (cols a multiple of 32).
uint64_t encoded_input_bytes(uint32_t n, uint32_t cols);
// encoded = x[n x cols] encoded as the CPU encodes the input of `type` weights (Q8_0, Q8_1 or
// Q8_K), once for all the tiles of every product that reads it (encode_input.comp).
void record_encode_input(Kernels& k, VkCommandBuffer cmd, ShaderWeightType type, VkBuffer x, VkBuffer encoded, uint32_t n,
                         uint32_t cols, bool barrier = true);
// Independent products of one input x[n x cols] (q/k/v, gate/up, or a single one), each
// y[n x w.rows] (+)= x * W^T, with one barrier after the last. Where they read their input
// encoded, x is encoded into `encoded` (at least encoded_input_bytes(n, cols)) before the first
// that needs each encoding, so that products of one encoding share it.
struct Product {
    const DeviceMatrix* w = nullptr;
    VkBuffer y = VK_NULL_HANDLE;
};
void record_products(Kernels& k, VkCommandBuffer cmd, std::span<const Product> products, VkBuffer x, uint32_t n, VkBuffer encoded,
                     bool accumulate = false);
// y[n x cols] = rows tokens[i] of the embedding table, times `scale`.
void record_embed(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& table, VkBuffer tokens, VkBuffer y, uint32_t n,
                  float scale = 1.0f);
// Whether a norm's result replaces y's rows or is added to them (a post-norm before the residual).
enum class NormOutput { Write, AddTo };
// y[i] (+)= rms_norm(x[map ? row_map[i] : i]) * weight, for i < n.
void record_rms_norm(Kernels& k, VkCommandBuffer cmd, VkBuffer x, VkBuffer weight, VkBuffer y, VkBuffer row_map,
                     bool use_map, uint32_t n, uint32_t cols, float eps, NormOutput output = NormOutput::Write,
                     bool barrier = true);

// The biases, per-head Q/K norms, RoPE and cache store of one layer's q, k, v in one dispatch.
struct QkvPrepare {
    VkBuffer q = VK_NULL_HANDLE, k = VK_NULL_HANDLE, v = VK_NULL_HANDLE;  // [n x heads x head_dim]; q rotated in place
    VkBuffer bias = VK_NULL_HANDLE;   // [q_dim | kv_dim | kv_dim], or null: no biases
    VkBuffer norms = VK_NULL_HANDLE;  // [head_dim (q's norm) | head_dim (k's norm)], or null: no norms
    bool q_norm = false, k_norm = false;
    VkBuffer positions = VK_NULL_HANDLE, rope_table = VK_NULL_HANDLE, slots = VK_NULL_HANDLE;
    VkBuffer k_cache = VK_NULL_HANDLE, v_cache = VK_NULL_HANDLE;
    RopeShape rope;                     // n_heads: the query heads
    uint32_t n_head_kv = 0;
    float eps = 0.0f;
    uint32_t block_tokens = 0;
    bool kv_f16 = false;
};
void record_qkv_prepare(Kernels& k, VkCommandBuffer cmd, const QkvPrepare& op, uint32_t n, bool barrier = true);
// qkv_prepare.comp's flags for `op`: 1 biases, 2 q's norm, 4 k's norm.
uint32_t qkv_prepare_flags(const QkvPrepare& op);

struct AttentionParams {
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    uint32_t block_tokens = 0;
    float scale = 1.0f;    // of q.k
    uint32_t window = 0;   // > 0: a sliding-window layer, positions pos - window < j <= pos
    bool kv_f16 = false;
};
// gate[i] = act(gate[i]) * up[i] for i < count: SwiGLU (Silu) or GeGLU (GeluTanh, through
// F16 as the CPU's geglu_inplace).
void record_gated_activation(Kernels& k, VkCommandBuffer cmd, VkBuffer gate, VkBuffer up, uint32_t count,
                             FfnActivation activation);

// The (cos, sin) of every pair at positions [0, n_positions), [n_positions x rope_dim/2 x 2],
// from rope_angles (engine/backend/rope.h), as the CPU backend's.
std::vector<float> rope_table(const RopeParams& rope, int n_positions);

}  // namespace inferscope::gpu
