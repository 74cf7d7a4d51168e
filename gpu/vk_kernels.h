#pragma once
// The compute pipelines of gpu/shaders (one per shader and specialization) and the
// recording of their dispatches. Descriptor sets are made once per distinct set of bound
// buffers and reused by every later step; each dispatch is followed by a barrier that makes
// its writes visible to the next.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/ggml_type.h"
#include "gpu/vk_context.h"
#include "gpu/vk_tuning.h"

namespace inferscope::gpu {

// The weight formats the shaders read in place (shaders/weight_layout.glsl's WEIGHT_TYPE).
enum class ShaderWeightType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q8_0 = 2,
    Q4_0 = 3,
    BF16 = 4,
    Q4_1 = 5,
    Q5_0 = 6,
    Q5_1 = 7,
    IQ4_NL = 8,
    Q4_K = 9,
    Q5_K = 10,
    Q6_K = 11,
    IQ4_XS = 12,
    Q2_K = 13,
    Q3_K = 14,
};
// The shader type that reads a GGUF weight type; UnsupportedError naming a type no shader reads.
ShaderWeightType shader_weight_type(GgmlType type);
// Whether the shaders read `type` in blocks (of 32 or 256 elements) rather than element by element.
bool is_block_type(ShaderWeightType type);
// Whether the CPU encodes the input of `type` weights as Q8_K (per 256-element block) rather
// than Q8_0: the formats of 256-element blocks.
bool q8_k_input(ShaderWeightType type);
// Whether it encodes it as Q8_1 (Q8_0 and the scaled sum of each block's codes): the formats
// with a minimum.
bool q8_1_input(ShaderWeightType type);

enum class Shader {
    Matmul,
    MatmulShared,
    MatmulTiled,
    Embed,
    RmsNorm,
    Swiglu,
    QkvPrepare,
    Matvec,
    MatvecShared,
    MatvecDot,
    MatvecQkv,  // the three above with qkv_prepare.comp's step (QKV_PREPARE)
    MatvecSharedQkv,
    MatvecDotQkv,
    MatmulDotTiled,
    AttentionSplit,
    AttentionSplitShared,
    ReadBandwidth,
    EncodeInput,
    Count
};

// The most storage buffers a shader the backend cannot do without binds (qkv_prepare.comp's);
// the mat-vec's *_qkv builds bind 16 and run only where the device allows them.
inline constexpr uint32_t kRequiredStorageBuffersPerShader = 10;
// The largest workgroup of the kernels every model runs (swiglu.comp, read_bandwidth.comp, the
// mat-vec's widest); Vulkan guarantees only 128.
inline constexpr uint32_t kRequiredWorkgroupThreads = 256;
// The most shared memory a kernel takes whatever the model: the mat-vec's partial sums (16 x 256
// floats) and finish_counter.glsl's flag. The integer-dot builds' encoded input and attention's
// rows are sized to the device, or refused by name.
inline constexpr uint32_t kRequiredSharedMemoryBytes = 16 * 256 * 4 + 4;

// A pipeline's specialization constants by constant_id (0..5); a constant its shader does
// not declare is ignored.
using SpecConstants = std::array<uint32_t, 6>;

// What one recording holds, for the per-step counts `bench` reports.
struct RecordCounts {
    uint32_t dispatches = 0;
    uint32_t barriers = 0;
};

class Kernels {
public:
    // Launch shapes from kernel_tuning(ctx.info()), or from `tuning`.
    explicit Kernels(VkContext& ctx);
    Kernels(VkContext& ctx, KernelTuning tuning);
    ~Kernels();
    Kernels(const Kernels&) = delete;
    Kernels& operator=(const Kernels&) = delete;

    // Records one dispatch of `shader` (specialized by `spec`) over `groups` workgroups with
    // the buffers bound in order and `push` as push constants, then a barrier unless
    // `barrier` is false (the next dispatch is independent of this one).
    void dispatch(VkCommandBuffer cmd, Shader shader, const SpecConstants& spec, const std::vector<VkBuffer>& buffers,
                  const void* push, uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, bool barrier = true);
    // Makes every earlier shader or transfer write visible to later shaders and transfers.
    void barrier(VkCommandBuffer cmd);
    // Forgets every descriptor set and starts a new generation. Sets are cached by buffer
    // handle, and a freed buffer's handle can be reused by a new one: call this whenever a
    // bound buffer is freed. A command buffer recorded in an older generation must not run.
    void forget_descriptor_sets();
    uint64_t generation() const { return generation_; }
    // Dispatches and barriers recorded since the last reset_counts().
    RecordCounts counts() const { return counts_; }
    void reset_counts() { counts_ = {}; }
    // Pipelines created so far (each shader and specialization once).
    uint64_t pipelines_created() const { return pipelines_.size(); }
    // While on, dispatch() and barrier() record nothing, and dispatch() notes each pipeline it
    // would have to create; create_noted_pipelines() then creates them.
    void note_pipelines_only(bool on) { noting_ = on; }
    // Creates the noted pipelines side by side, one thread each up to the host's threads: a
    // driver compiles a pipeline as it is created, so a pass recorded first would otherwise
    // wait for its kernels' compilations one after another. Returns the threads it used.
    size_t create_noted_pipelines();
    // `count` workgroups launched as X x Y with X within the device's limit (the shaders
    // linearise the ids and skip those past the end).
    std::pair<uint32_t, uint32_t> fold_groups(uint64_t count) const {
        const auto x = static_cast<uint32_t>(std::min<uint64_t>(count, max_groups_x_));
        return {x, static_cast<uint32_t>((count + x - 1) / x)};
    }
    const KernelTuning& tuning() const { return tuning_; }
    // Whether products on encoded inputs (encodes_input) may run on integer dot products (matvec_dot,
    // matmul_dot_tiled): the tuning asks for it and the device has them and subgroup arithmetic.
    bool integer_dot() const { return integer_dot_; }
    // Whether products with `type` weights multiply their input encoded as the CPU encodes it,
    // in every product kernel, so that decode and prefill agree: where integer_dot(), the
    // quantized types (Q8_0 inputs for Q8_0, Q4_0, Q5_0 and IQ4_NL; Q8_1 for Q4_1 and Q5_1;
    // Q8_K for the K-quants and IQ4_XS).
    bool encodes_input(ShaderWeightType type) const { return integer_dot_ && is_block_type(type); }
    // The most shared memory one workgroup may use (maxComputeSharedMemorySize).
    uint32_t max_shared_bytes() const { return max_shared_bytes_; }
    // Whether the device lets one shader bind as many storage buffers as `shader` does.
    bool binds_enough_buffers(Shader shader) const;

    static constexpr uint32_t kMatmulThreads = 64;
    static constexpr uint32_t kMatmulTokens = 8;  // tokens per matmul workgroup (matmul.comp TOKENS)
    // From this many tokens on, products use matmul_tiled.comp (64 x 64 output tiles in F32);
    // those encoding their input (encodes_input) use matmul_dot_tiled.comp (the same tiles on
    // integer dot products) from kMatvecMaxTokens + 1 on.
    static constexpr uint32_t kTiledMinTokens = 16;
    static constexpr uint32_t kTileRows = 64;
    static constexpr uint32_t kTileTokens = 64;
    // The matmul variant for this device and how many weight rows one workgroup computes.
    Shader matmul_shader() const { return subgroups_ ? Shader::Matmul : Shader::MatmulShared; }
    uint32_t matmul_rows_per_group() const { return subgroups_ ? kMatmulThreads / subgroup_size_ : 1; }
    // The specialization of matmul.comp / the tiles / embed.comp for weights of `type`.
    SpecConstants matmul_spec(ShaderWeightType type) const {
        return {kMatmulThreads, static_cast<uint32_t>(type), matmul_rows_per_group(), 0};
    }

private:
    struct Pipeline {
        VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
        VkPipelineLayout layout = VK_NULL_HANDLE;
        VkPipeline pipeline = VK_NULL_HANDLE;
    };
    using PipelineKey = std::pair<Shader, SpecConstants>;
    Pipeline& pipeline(Shader shader, const SpecConstants& spec);
    Pipeline create(Shader shader, const SpecConstants& spec);
    VkDescriptorSet descriptor_set(Shader shader, const Pipeline& p, const std::vector<VkBuffer>& buffers);
    void add_descriptor_pool();

    VkContext& ctx_;
    KernelTuning tuning_;
    bool subgroups_ = false;  // subgroup arithmetic in compute shaders, size dividing kMatmulThreads
    uint32_t subgroup_size_ = 1;
    uint32_t max_groups_x_ = 65535;
    bool integer_dot_ = false;
    uint32_t max_shared_bytes_ = 16384;
    uint32_t max_storage_buffers_ = 4;
    uint64_t generation_ = 0;
    RecordCounts counts_;
    std::map<PipelineKey, Pipeline> pipelines_;
    bool noting_ = false;
    std::set<PipelineKey> noted_;  // wanted by dispatches recorded while noting_, not created yet
    // Keyed by shader, not pipeline: every specialization of a shader has the same set layout.
    std::map<std::pair<Shader, std::vector<VkBuffer>>, VkDescriptorSet> sets_;
    std::vector<VkDescriptorPool> pools_;  // the last one has room; full ones are kept until forgotten
    uint32_t sets_in_last_pool_ = 0;
};

}  // namespace inferscope::gpu
