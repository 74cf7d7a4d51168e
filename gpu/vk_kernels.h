#pragma once
// The compute pipelines of gpu/shaders (one per shader and specialization) and the
// recording of their dispatches. Descriptor sets are made once per distinct set of bound
// buffers and reused by every later step; each dispatch is followed by a barrier that makes
// its writes visible to the next.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/formats/ggml_type.h"
#include "gpu/vk_context.h"

namespace inferscope::gpu {

// The weight formats the shaders read natively (weights.glsl's WEIGHT_TYPE).
enum class ShaderWeightType : uint32_t { F32 = 0, F16 = 1, Q8_0 = 2, Q4_0 = 3 };
// The shader type a GGUF type is uploaded as: itself when native, else F16.
ShaderWeightType shader_weight_type(GgmlType type);

enum class Shader { Matmul, MatmulShared, MatmulTiled, Embed, RmsNorm, Rope, Add, Swiglu, KvWrite, Attention, Count };

class Kernels {
public:
    explicit Kernels(VkContext& ctx);
    ~Kernels();
    Kernels(const Kernels&) = delete;
    Kernels& operator=(const Kernels&) = delete;

    // Records one dispatch of `shader` (specialization `variant`) over `groups` workgroups
    // with the buffers bound in order and `push` as push constants, then a barrier unless
    // `barrier` is false (the next dispatch is independent of this one).
    void dispatch(VkCommandBuffer cmd, Shader shader, uint32_t variant, const std::vector<VkBuffer>& buffers,
                  const void* push, uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, bool barrier = true);
    // Makes every earlier shader or transfer write visible to later shaders and transfers.
    static void barrier(VkCommandBuffer cmd);
    // Forgets every descriptor set. Sets are cached by buffer handle, and a freed buffer's
    // handle can be reused by a new one: call this whenever a bound buffer is freed.
    void forget_descriptor_sets();

    static constexpr uint32_t kMatmulThreads = 64;
    static constexpr uint32_t kMatmulTokens = 8;  // tokens per matmul workgroup (matmul.comp TOKENS)
    // From this many tokens on, products use matmul_tiled.comp (64 x 64 output tiles).
    static constexpr uint32_t kTiledMinTokens = 16;
    static constexpr uint32_t kTileRows = 64;
    static constexpr uint32_t kTileTokens = 64;
    // The matmul variant for this device and how many weight rows one workgroup computes.
    Shader matmul_shader() const { return subgroups_ ? Shader::Matmul : Shader::MatmulShared; }
    uint32_t matmul_rows_per_group() const { return subgroups_ ? kMatmulThreads / subgroup_size_ : 1; }

private:
    struct Pipeline {
        VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
        VkPipelineLayout layout = VK_NULL_HANDLE;
        VkPipeline pipeline = VK_NULL_HANDLE;
    };
    Pipeline& pipeline(Shader shader, uint32_t variant);
    Pipeline create(Shader shader, uint32_t variant);
    VkDescriptorSet descriptor_set(Shader shader, uint32_t variant, const Pipeline& p, const std::vector<VkBuffer>& buffers);
    void add_descriptor_pool();

    VkContext& ctx_;
    bool subgroups_ = false;  // subgroup arithmetic in compute shaders, size dividing kMatmulThreads
    uint32_t subgroup_size_ = 1;
    std::map<std::pair<Shader, uint32_t>, Pipeline> pipelines_;
    std::map<std::pair<std::pair<Shader, uint32_t>, std::vector<VkBuffer>>, VkDescriptorSet> sets_;
    std::vector<VkDescriptorPool> pools_;  // the last one has room; full ones are kept until forgotten
    uint32_t sets_in_last_pool_ = 0;
};

}  // namespace inferscope::gpu
