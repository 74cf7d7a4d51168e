#include "gpu/vk_kernels.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "gpu/shader_spirv.h"

namespace inferscope::gpu {
namespace {

struct ShaderSpec {
    const char* name;
    uint32_t bindings;
};

constexpr std::array<ShaderSpec, static_cast<size_t>(Shader::Count)> kSpecs = {{
    {"matmul", 3},
    {"matmul_shared", 3},
    {"matmul_tiled", 3},
    {"embed", 3},
    {"rms_norm", 4},
    {"swiglu", 2},
    {"qkv_prepare", 10},
    {"matvec", 8},
    {"matvec_shared", 8},
    {"matvec_dot", 8},
    {"matvec_qkv", 16},
    {"matvec_shared_qkv", 16},
    {"matvec_dot_qkv", 16},
    {"matmul_dot_tiled", 3},
    {"attention_split", 9},
    {"attention_split_shared", 9},
    {"read_bandwidth", 2},
    {"encode_input", 2},
}};
constexpr uint32_t kPushBytes = 48;
static_assert(std::all_of(kSpecs.begin(), kSpecs.end(),
                          [](const ShaderSpec& spec) {
                              return spec.bindings <= kRequiredStorageBuffersPerShader ||
                                     std::string_view(spec.name).ends_with("_qkv");
                          }),
              "a required shader binds more buffers than devices are asked for");
constexpr uint32_t kSetsPerPool = 1024;
// The most bindings any shader has: every set a pool holds fits its descriptor count.
constexpr uint32_t kMaxBindings = [] {
    uint32_t most = 0;
    for (const ShaderSpec& spec : kSpecs) most = std::max(most, spec.bindings);
    return most;
}();

}  // namespace

ShaderWeightType shader_weight_type(GgmlType type) {
    // Every format a weight file uses; the activation formats (Q8_1, Q8_K) and integer types are refused.
    static constexpr std::array<std::pair<GgmlType, ShaderWeightType>, 15> kRead = {{
        {GgmlType::F32, ShaderWeightType::F32},
        {GgmlType::F16, ShaderWeightType::F16},
        {GgmlType::BF16, ShaderWeightType::BF16},
        {GgmlType::Q8_0, ShaderWeightType::Q8_0},
        {GgmlType::Q4_0, ShaderWeightType::Q4_0},
        {GgmlType::Q4_1, ShaderWeightType::Q4_1},
        {GgmlType::Q5_0, ShaderWeightType::Q5_0},
        {GgmlType::Q5_1, ShaderWeightType::Q5_1},
        {GgmlType::IQ4_NL, ShaderWeightType::IQ4_NL},
        {GgmlType::Q4_K, ShaderWeightType::Q4_K},
        {GgmlType::Q5_K, ShaderWeightType::Q5_K},
        {GgmlType::Q6_K, ShaderWeightType::Q6_K},
        {GgmlType::IQ4_XS, ShaderWeightType::IQ4_XS},
        {GgmlType::Q2_K, ShaderWeightType::Q2_K},
        {GgmlType::Q3_K, ShaderWeightType::Q3_K},
    }};
    for (const auto& [ggml, shader] : kRead) {
        if (ggml == type) return shader;
    }
    throw UnsupportedError("the Vulkan backend reads no weights of type " + std::string(ggml_type_name(type)));
}

bool is_block_type(ShaderWeightType type) {
    return type != ShaderWeightType::F32 && type != ShaderWeightType::F16 && type != ShaderWeightType::BF16;
}

bool q8_k_input(ShaderWeightType type) {
    return type == ShaderWeightType::Q4_K || type == ShaderWeightType::Q5_K || type == ShaderWeightType::Q6_K ||
           type == ShaderWeightType::IQ4_XS || type == ShaderWeightType::Q2_K || type == ShaderWeightType::Q3_K;
}

bool q8_1_input(ShaderWeightType type) { return type == ShaderWeightType::Q4_1 || type == ShaderWeightType::Q5_1; }

Kernels::Kernels(VkContext& ctx) : Kernels(ctx, kernel_tuning(ctx.info())) {}

Kernels::Kernels(VkContext& ctx, KernelTuning tuning) : ctx_(ctx), tuning_(std::move(tuning)) {
    const DeviceInfo& info = ctx.info();
    subgroup_size_ = info.subgroup_size;
    static_assert(kMatmulThreads == 64, "subgroup_reductions assumes 64-thread workgroups");
    subgroups_ = subgroup_reductions(info);
    if (!subgroups_) subgroup_size_ = 1;
    max_groups_x_ = info.max_workgroup_count_x;
    max_shared_bytes_ = info.max_shared_memory_bytes;
    max_storage_buffers_ = info.max_storage_buffers_per_shader;
    integer_dot_ = integer_dot_in_use(info, tuning_);
    add_descriptor_pool();
}

Kernels::~Kernels() {
    const VkDevice device = ctx_.device();
    for (VkDescriptorPool pool : pools_) vkDestroyDescriptorPool(device, pool, nullptr);
    for (auto& [key, p] : pipelines_) {
        vkDestroyPipeline(device, p.pipeline, nullptr);
        vkDestroyPipelineLayout(device, p.layout, nullptr);
        vkDestroyDescriptorSetLayout(device, p.set_layout, nullptr);
    }
}

void Kernels::add_descriptor_pool() {
    const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
    VkDescriptorPoolCreateInfo create{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    create.maxSets = kSetsPerPool;
    create.poolSizeCount = 1;
    create.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    vk_check(vkCreateDescriptorPool(ctx_.device(), &create, nullptr, &pool), "vkCreateDescriptorPool");
    pools_.push_back(pool);
    sets_in_last_pool_ = 0;
}

void Kernels::forget_descriptor_sets() {
    for (VkDescriptorPool pool : pools_) vkDestroyDescriptorPool(ctx_.device(), pool, nullptr);
    pools_.clear();
    sets_.clear();
    ++generation_;
    add_descriptor_pool();
}

bool Kernels::binds_enough_buffers(Shader shader) const {
    return kSpecs[static_cast<size_t>(shader)].bindings <= max_storage_buffers_;
}

Kernels::Pipeline Kernels::create(Shader shader, const SpecConstants& constants) {
    const ShaderSpec& spec = kSpecs[static_cast<size_t>(shader)];
    if (!binds_enough_buffers(shader)) {
        throw UnsupportedError(std::string("the Vulkan device binds at most ") + std::to_string(max_storage_buffers_) +
                               " storage buffers per shader; " + spec.name + " needs " + std::to_string(spec.bindings));
    }
    const VkDevice device = ctx_.device();
    Pipeline p;
    std::vector<VkDescriptorSetLayoutBinding> bindings(spec.bindings);
    for (uint32_t i = 0; i < spec.bindings; ++i) {
        bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    }
    VkDescriptorSetLayoutCreateInfo set_create{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_create.bindingCount = spec.bindings;
    set_create.pBindings = bindings.data();
    vk_check(vkCreateDescriptorSetLayout(device, &set_create, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
    const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
    VkPipelineLayoutCreateInfo layout_create{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_create.setLayoutCount = 1;
    layout_create.pSetLayouts = &p.set_layout;
    layout_create.pushConstantRangeCount = 1;
    layout_create.pPushConstantRanges = &push;
    vk_check(vkCreatePipelineLayout(device, &layout_create, nullptr, &p.layout), "vkCreatePipelineLayout");

    const std::span<const uint32_t> code = shader_spirv(spec.name);
    VkShaderModuleCreateInfo module_create{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_create.codeSize = code.size_bytes();
    module_create.pCode = code.data();
    VkShaderModule module = VK_NULL_HANDLE;
    vk_check(vkCreateShaderModule(device, &module_create, nullptr, &module), "vkCreateShaderModule");

    std::array<VkSpecializationMapEntry, std::tuple_size_v<SpecConstants>> entries{};
    for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * 4, 4};
    VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(), sizeof constants, constants.data()};
    VkComputePipelineCreateInfo create{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    create.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    create.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    create.stage.module = module;
    create.stage.pName = "main";
    create.stage.pSpecializationInfo = &specialization;
    create.layout = p.layout;
    const VkResult result = vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &create, nullptr, &p.pipeline);
    vkDestroyShaderModule(device, module, nullptr);
    vk_check(result, spec.name);
    return p;
}

Kernels::Pipeline& Kernels::pipeline(Shader shader, const SpecConstants& spec) {
    const auto key = std::make_pair(shader, spec);
    auto it = pipelines_.find(key);
    if (it == pipelines_.end()) it = pipelines_.emplace(key, create(shader, spec)).first;
    return it->second;
}

size_t Kernels::create_noted_pipelines() {
    const std::vector<PipelineKey> keys(noted_.begin(), noted_.end());
    noted_.clear();
    if (keys.empty()) return 0;
    std::vector<Pipeline> made(keys.size());
    std::vector<std::exception_ptr> errors(keys.size());
    const size_t threads = std::min<size_t>(keys.size(), std::max(1u, std::thread::hardware_concurrency()));
    const auto create_share = [&](size_t first) {
        for (size_t i = first; i < keys.size(); i += threads) {
            try {
                made[i] = create(keys[i].first, keys[i].second);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    size_t threads_used = 1;
    {
        std::vector<std::jthread> workers;
        for (size_t t = 1; t < threads; ++t) {
            try {
                workers.emplace_back(create_share, t);
                ++threads_used;
            } catch (const std::system_error&) {
                create_share(t);  // no thread to be had: this one takes the share
            }
        }
        create_share(0);
    }  // joined
    for (size_t i = 0; i < keys.size(); ++i) {
        if (!errors[i]) pipelines_.emplace(keys[i], made[i]);
    }
    for (const std::exception_ptr& error : errors) {
        if (error) std::rethrow_exception(error);
    }
    return threads_used;
}

VkDescriptorSet Kernels::descriptor_set(Shader shader, const Pipeline& p, const std::vector<VkBuffer>& buffers) {
    auto key = std::make_pair(shader, buffers);
    if (auto it = sets_.find(key); it != sets_.end()) return it->second;
    // No pool is left where forget_descriptor_sets failed to create its new one.
    if (pools_.empty() || sets_in_last_pool_ == kSetsPerPool) add_descriptor_pool();
    VkDescriptorSetAllocateInfo allocate{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    allocate.descriptorPool = pools_.back();
    allocate.descriptorSetCount = 1;
    allocate.pSetLayouts = &p.set_layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_check(vkAllocateDescriptorSets(ctx_.device(), &allocate, &set), "vkAllocateDescriptorSets");
    ++sets_in_last_pool_;
    std::vector<VkDescriptorBufferInfo> infos(buffers.size());
    std::vector<VkWriteDescriptorSet> writes(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
        infos[i] = {buffers[i], 0, VK_WHOLE_SIZE};
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = static_cast<uint32_t>(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(ctx_.device(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    sets_.emplace(std::move(key), set);
    return set;
}

void Kernels::dispatch(VkCommandBuffer cmd, Shader shader, const SpecConstants& constants, const std::vector<VkBuffer>& buffers,
                       const void* push, uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y, bool barrier) {
    const ShaderSpec& spec = kSpecs[static_cast<size_t>(shader)];
    if (buffers.size() != spec.bindings || push_bytes > kPushBytes) {
        throw Error(std::string("internal: wrong bindings or push constants for shader ") + spec.name);
    }
    if (groups_x == 0 || groups_y == 0) return;
    if (groups_x > max_groups_x_) {
        throw Error(std::string("internal: ") + spec.name + " launches more workgroups than the device allows along X");
    }
    if (noting_) {
        if (pipelines_.find({shader, constants}) == pipelines_.end()) noted_.insert({shader, constants});
        return;
    }
    const Pipeline& p = pipeline(shader, constants);
    const VkDescriptorSet set = descriptor_set(shader, p, buffers);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    uint8_t padded[kPushBytes] = {};
    std::memcpy(padded, push, push_bytes);
    vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes, padded);
    vkCmdDispatch(cmd, groups_x, groups_y, 1);
    ++counts_.dispatches;
    if (barrier) this->barrier(cmd);
}

void Kernels::barrier(VkCommandBuffer cmd) {
    if (noting_) return;
    ++counts_.barriers;
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace inferscope::gpu
