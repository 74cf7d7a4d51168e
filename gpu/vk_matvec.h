#pragma once
// Matrix-vector products for 1..kMatvecMaxTokens tokens (decode and small batches) through
// matvec.comp: a team of threads per weight row splitting its K dimension, several rows per
// workgroup for short rows, with an optional RMSNorm of the input applied inside the product
// and fused variants for q/k/v (several matrices, one dispatch) and gate/up (the gated FFN
// activation computed in the same workgroup).
#include <vulkan/vulkan.h>

#include <cstdint>
#include <span>

#include "engine/model/model.h"
#include "gpu/vk_kernels.h"
#include "gpu/vk_ops.h"

namespace inferscope::gpu {

constexpr uint32_t kMatvecMaxTokens = 8;
// The longest head record_matvec_qkv_prepared prepares: matvec.comp's shared rows hold one.
constexpr uint32_t kMatvecMaxHeadDim = 256;

// RMSNorm of each input row applied inside the product (x / sqrt(mean(x^2) + eps) * weight),
// as rms_norm.comp computes it, so no separate norm dispatch is needed. weight ==
// VK_NULL_HANDLE: no norm.
struct MatvecNorm {
    VkBuffer weight = VK_NULL_HANDLE;
    float eps = 0.0f;
};

// y[t * y_stride + r] (+)= dot(W[r], norm(x[t])) for t < n <= kMatvecMaxTokens; every part of a
// split matrix (DeviceMatrix::parts, one dispatch each) writes its own rows.
void record_matvec(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer x, VkBuffer y, uint32_t n, uint32_t y_stride,
                   bool accumulate, const MatvecNorm& norm = {}, bool barrier = true);

// A post-norm added to the residual inside the product's dispatch (Gemma's post-attention and
// post-FFN norms): residual[t] += rms_norm(W x[t]) * weight, as rms_norm.comp adds it.
struct MatvecPostNorm {
    VkBuffer weight = VK_NULL_HANDLE;  // [rows]
    float eps = 0.0f;
    VkBuffer residual = VK_NULL_HANDLE;         // [n x rows]
    VkBuffer finished_groups = VK_NULL_HANDLE;  // one finish_counters counter
};

// projected[n x rows] = W x[t] for t < n <= kMatvecMaxTokens, then the post-norm of each row added
// to post.residual by the workgroup that stores its rows last, in one dispatch. Requires a
// single-part w.
void record_matvec_post_normed(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer x, VkBuffer projected, uint32_t n,
                               const MatvecPostNorm& post, bool barrier = true);

// Up to 3 matrices of one column count (q, k, v) in one dispatch: matrix i's rows land in
// ys[i] ([n x rows_i]). Requires matvec_fusable(ws).
void record_matvec_multi(Kernels& k, VkCommandBuffer cmd, std::span<const DeviceMatrix* const> ws, VkBuffer x,
                         std::span<const VkBuffer> ys, uint32_t n, const MatvecNorm& norm = {}, bool barrier = true);

// Up to 3 single-part matrices of one column count whose types may not share a dispatch (F16
// beside Q8_0, Q4_K beside Q5_0): one record_matvec_multi per group that can (matvec_fusable),
// each group the first matrix left and those that can join it, with one barrier after the last
// (they write separate outputs). Requires matvec_groupable(ws).
void record_matvec_grouped(Kernels& k, VkCommandBuffer cmd, std::span<const DeviceMatrix* const> ws, VkBuffer x,
                           std::span<const VkBuffer> ys, uint32_t n, const MatvecNorm& norm = {});

// out[t * rows + r] = act(dot(gate[r], x^[t])) * dot(up[r], x^[t]) with swiglu.comp's SwiGLU or
// GeGLU (F16 roundings included), both rows of r computed by the same workgroup. gate and up
// must have types that share a dispatch (as matvec_fusable), one shape and one row split (as
// upload_matrix gives matrices of one shape and type).
void record_matvec_gated(Kernels& k, VkCommandBuffer cmd, const DeviceMatrix& gate, const DeviceMatrix& up, VkBuffer x,
                         VkBuffer out, uint32_t n, FfnActivation activation, const MatvecNorm& norm = {}, bool barrier = true);

// Whether a product of `type` weights with rows of `cols` for n tokens runs on integer dot
// products (matvec.comp's INTEGER_DOT build): where Kernels::encodes_input(type) and the n
// encoded input rows fit the workgroup's shared memory. Else in F32, the input still encoded
// (Q8_0, Q8_1 or Q8_K) where Kernels::encodes_input(type).
bool matvec_uses_integer_dot(const Kernels& k, ShaderWeightType type, uint32_t cols, uint32_t n);

// Whether a product of F16 or BF16 weights with rows of `cols` for n tokens rounds its input
// (as the CPU does for such weights) once per workgroup into the shared memory its reduction
// uses afterwards (4,096 floats: n x cols up to that), rather than as each row reads it.
bool matvec_stages_half_input(ShaderWeightType type, uint32_t cols, uint32_t n);

// q, k, v from x as record_matvec_multi computes them (ws: wq, wk, wv), and in the same
// dispatch record_qkv_prepare's step with `prepare` (whose q, k, v are the products' outputs):
// the workgroup that stores a head's rows last prepares that head of every token, found by
// head_counters (finish_counters, one per head: q's, then k's and v's). Gives what the two
// dispatches give, bit for bit. Requires matvec_prepares_qkv(k, ws, prepare), and the norm's
// epsilon equal to prepare.eps (one push constant holds both).
void record_matvec_qkv_prepared(Kernels& k, VkCommandBuffer cmd, std::span<const DeviceMatrix* const> ws, VkBuffer x, uint32_t n,
                                const MatvecNorm& norm, const QkvPrepare& prepare, VkBuffer head_counters, bool barrier = true);
// Whether record_matvec_qkv_prepared takes these: wq, wk, wv as matvec_fusable, of prepare's
// heads, head_dim at most kMatvecMaxHeadDim, on a device that binds its 16 buffers.
bool matvec_prepares_qkv(const Kernels& k, std::span<const DeviceMatrix* const> ws, const QkvPrepare& prepare);

// Whether these matrices can share one dispatch: 1..3 of them, same cols, one part each, and
// one shader type, or block types whose input one encoding serves (shared_input_encoding: a
// Q4_K_M file's Q4_K q and k with its Q6_K v, both Q8_K; a Q5_K_M file's Q5_1 q and k with its
// Q8_0 v on rows that 256 does not divide, Q8_1 serving both).
bool matvec_fusable(std::span<const DeviceMatrix* const> ws);

// Whether record_matvec_grouped takes them: 1..3 of them, same cols, one part each.
bool matvec_groupable(std::span<const DeviceMatrix* const> ws);

}  // namespace inferscope::gpu
