#include "gpu/vulkan_backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "engine/backend/rope.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "gpu/pass_fitting.h"
#include "gpu/vk_attention.h"
#include "gpu/vk_matvec.h"
#include "gpu/vulkan_backend_factory.h"

namespace inferscope::gpu {
namespace {

// The most tokens one pass handles: bounded so that every activation and the logits of a
// pass fit one storage binding; longer batches run as consecutive passes (each token's K/V
// is stored before later tokens attend to it, so the split changes nothing).
constexpr int kMaxPassTokens = 512;

int pass_tokens(const ModelConfig& c, uint64_t max_binding_bytes) {
    const uint64_t widest_row = static_cast<uint64_t>(std::max({c.n_vocab, c.n_ff, c.q_dim(), c.n_embd})) * sizeof(float);
    const auto fit = static_cast<int>(std::min<uint64_t>(max_binding_bytes / widest_row, kMaxPassTokens));
    if (fit < 1) throw UnsupportedError("one row of logits does not fit a storage binding of this Vulkan device");
    return fit;
}

Buffer float_buffer(const VkContext& ctx, size_t count) { return Buffer(ctx, count * sizeof(float), Buffer::Kind::Device); }

Buffer optional_floats(VkContext& ctx, BufferArena& arena, const std::vector<float>& values) {
    return values.empty() ? Buffer() : upload_floats(ctx, arena, values);
}

// Concatenated per-layer vectors (q, k and v biases; q and k head norms), empty when all are.
std::vector<float> concatenated(std::initializer_list<const std::vector<float>*> parts) {
    std::vector<float> out;
    for (const std::vector<float>* part : parts) out.insert(out.end(), part->begin(), part->end());
    return out;
}

// Timestamps one layer may write: one per operation, at most 11 (more than 8 tokens, with
// post-norms).
constexpr uint32_t kMaxLayerMarks = 16;
// Recorded passes kept for replay: decode, the prompt's passes and a few batch shapes.
constexpr size_t kMaxRecordings = 8;

}  // namespace

VulkanBackend::VulkanBackend(std::shared_ptr<const Model> model, const ContextOptions& context,
                             const VulkanBackendOptions& options)
    : model_(std::move(model)),
      ctx_(std::make_unique<VkContext>(context)),
      kernels_(std::make_unique<Kernels>(*ctx_, kernel_tuning(ctx_->info(), options.kernel_tuning, options.integer_dot))),
      replay_(options.replay),
      kernels_ahead_(options.kernels_ahead.value_or(ctx_->info().type != "cpu")) {
    const ModelConfig& c = model_->config();
    if (c.head_dim > 256) throw UnsupportedError("Vulkan backend: head_dim " + std::to_string(c.head_dim) + " > 256");
    if (c.n_head % c.n_head_kv != 0) throw UnsupportedError("Vulkan backend: n_head is not a multiple of n_head_kv");
    check_attention_fits(*kernels_, static_cast<uint32_t>(c.n_head / c.n_head_kv), static_cast<uint32_t>(c.head_dim));
    max_tokens_ = pass_tokens(c, ctx_->info().max_storage_buffer_range_bytes);
    if (options.max_pass_tokens > 0) max_tokens_ = std::min(max_tokens_, options.max_pass_tokens);
    pass_token_limit_ = max_tokens_;
    upload_weights();
    allocate_step_buffers();
    if (options.op_timestamps && ctx_->info().timestamps) {
        query_capacity_ = 8 + kMaxLayerMarks * static_cast<uint32_t>(c.n_layer) +
                          2 * static_cast<uint32_t>(token_embd_.parts.size() + output_.parts.size());
        VkQueryPoolCreateInfo create{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        create.queryType = VK_QUERY_TYPE_TIMESTAMP;
        create.queryCount = query_capacity_;
        vk_check(vkCreateQueryPool(ctx_->device(), &create, nullptr, &queries_), "vkCreateQueryPool");
    }
}

VulkanBackend::~VulkanBackend() {
    ctx_->wait_idle();  // a pass whose wait failed may still use the buffers and recordings freed below
    forget_recordings();
    if (queries_ != VK_NULL_HANDLE) vkDestroyQueryPool(ctx_->device(), queries_, nullptr);
}

// A CPU driver (lavapipe) is named as one: it is never to pass for a GPU.
std::string VulkanBackend::name() const {
    const DeviceInfo& info = ctx_->info();
    return "Vulkan (" + info.name + (info.type == "cpu" ? ", a CPU driver" : "") + ")";
}

void VulkanBackend::set_activation_tap(ActivationTap* tap) {
    if (tap != nullptr) throw UnsupportedError("activation taps need the CPU backend (--backend cpu)");
}

// Every weight's device bytes, checked against the device-local budget before any upload, so
// that a model that cannot fit fails at once with the sizes instead of midway.
uint64_t VulkanBackend::check_weights_fit() const {
    uint64_t bytes = device_matrix_bytes(model_->token_embedding());
    if (model_->output().data != model_->token_embedding().data) bytes += device_matrix_bytes(model_->output());
    for (const LayerWeights& w : model_->layers()) {
        for (const WeightMatrix* m : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down}) bytes += device_matrix_bytes(*m);
    }
    const uint64_t budget = device_local_budget_bytes(ctx_->info());
    if (budget > 0 && bytes > budget) {
        throw CapacityError("the model's weights need " + mib_text(bytes) + " of device memory; " + ctx_->info().name +
                            " has a device-local budget of " + mib_text(budget));
    }
    return bytes;
}

void VulkanBackend::upload_weights() {
    const uint64_t matrix_bytes = check_weights_fit();
    VkContext& ctx = *ctx_;
    // A small model's weights (with room for the norms and each buffer's alignment) take one
    // block of their own size; a large one's, blocks of the default size.
    weight_arena_ = std::make_unique<BufferArena>(
        ctx, std::min(BufferArena::kDefaultBlockBytes, matrix_bytes + matrix_bytes / 64 + (1u << 20)));
    BufferArena& arena = *weight_arena_;
    const ModelConfig& c = model_->config();
    for (const LayerWeights& w : model_->layers()) {
        Layer l;
        l.local = c.is_local_layer(static_cast<int>(layers_.size()));
        l.attn_norm = upload_floats(ctx, arena, w.attn_norm);
        l.ffn_norm = upload_floats(ctx, arena, w.ffn_norm);
        l.wq = upload_matrix(ctx, arena, w.wq);
        l.wk = upload_matrix(ctx, arena, w.wk);
        l.wv = upload_matrix(ctx, arena, w.wv);
        l.wo = upload_matrix(ctx, arena, w.wo);
        l.w_gate = upload_matrix(ctx, arena, w.w_gate);
        l.w_up = upload_matrix(ctx, arena, w.w_up);
        l.w_down = upload_matrix(ctx, arena, w.w_down);
        l.qkv_bias = optional_floats(ctx, arena, concatenated({&w.bq, &w.bk, &w.bv}));
        // An absent norm of the pair is a zero row: the shader reads neither weight it lacks.
        l.q_norm = !w.q_norm.empty();
        l.k_norm = !w.k_norm.empty();
        const std::vector<float> zeros(static_cast<size_t>(c.head_dim), 0.0f);
        if (l.q_norm || l.k_norm) {
            l.qk_norms = upload_floats(ctx, arena, concatenated({l.q_norm ? &w.q_norm : &zeros, l.k_norm ? &w.k_norm : &zeros}));
        }
        l.post_attention_norm = optional_floats(ctx, arena, w.post_attention_norm);
        l.post_ffw_norm = optional_floats(ctx, arena, w.post_ffw_norm);
        layers_.push_back(std::move(l));
    }
    token_embd_ = upload_matrix(ctx, arena, model_->token_embedding());
    // A tied output reads the same table: share it instead of uploading it twice.
    if (model_->output().data != model_->token_embedding().data) output_ = upload_matrix(ctx, arena, model_->output());
    output_norm_ = upload_floats(ctx, arena, model_->output_norm());
}

VulkanBackend::StagedInts VulkanBackend::staged_ints(size_t count) const {
    return {Buffer(*ctx_, count * sizeof(int32_t), Buffer::Kind::Host), Buffer(*ctx_, count * sizeof(int32_t), Buffer::Kind::Device)};
}

void VulkanBackend::allocate_step_buffers() {
    const ModelConfig& c = model_->config();
    const auto n = static_cast<size_t>(max_tokens_);
    StepBuffers& s = step_;
    s.tokens = staged_ints(n);
    s.positions = staged_ints(n);
    s.output_rows = staged_ints(n);
    for (KvTables* kv : {&s.global_kv, &s.local_kv}) {
        if (kv == &s.local_kv && !c.has_local_layers()) continue;
        kv->slots = staged_ints(n);
        kv->table_start = staged_ints(n);
        kv->tables = staged_ints(256);
    }
    s.x = float_buffer(*ctx_, n * static_cast<size_t>(c.n_embd));
    s.normed = float_buffer(*ctx_, n * static_cast<size_t>(c.n_embd));
    if (c.has_post_norms) s.projected = float_buffer(*ctx_, n * static_cast<size_t>(c.n_embd));
    // Dispatches that use them are separated by barriers and leave them zero, so they share them.
    s.finish_counters = finish_counters(*ctx_, static_cast<uint64_t>(c.n_head + 2 * c.n_head_kv));
    s.q = float_buffer(*ctx_, n * static_cast<size_t>(c.q_dim()));
    s.context = float_buffer(*ctx_, n * static_cast<size_t>(c.q_dim()));
    s.k = float_buffer(*ctx_, n * static_cast<size_t>(c.kv_dim()));
    s.v = float_buffer(*ctx_, n * static_cast<size_t>(c.kv_dim()));
    s.gate = float_buffer(*ctx_, n * static_cast<size_t>(c.n_ff));
    s.up = float_buffer(*ctx_, n * static_cast<size_t>(c.n_ff));
    if (kernels_->integer_dot()) {
        const auto widest_input = static_cast<uint32_t>(std::max({c.n_embd, c.q_dim(), c.n_ff}));
        s.encoded = Buffer(*ctx_, encoded_input_bytes(static_cast<uint32_t>(n), widest_input), Buffer::Kind::Device);
    }
    ensure_logit_rows(1);
}

void VulkanBackend::ensure_logit_rows(int rows) {
    if (rows <= step_.logit_rows) return;
    const int grown = std::min(std::max(rows, 2 * step_.logit_rows), max_tokens_);
    const auto bytes = static_cast<uint64_t>(grown) * static_cast<uint64_t>(model_->config().n_vocab) * sizeof(float);
    // Both are made before either replaces the buffer recorded passes bind, so that a refused
    // allocation leaves those passes valid.
    Buffer logits(*ctx_, bytes, Buffer::Kind::Device);
    Buffer logits_host(*ctx_, bytes, Buffer::Kind::Host);
    kernels_->forget_descriptor_sets();
    step_.logits = std::move(logits);
    step_.logits_host = std::move(logits_host);
    step_.logit_rows = grown;
}

void VulkanBackend::allocate_kv(const KvCacheLayout& layout) {
    check_kv_layout(model_->config(), layout);
    ctx_->finish_pending();
    for (const KvLayout* group : {&layout.global, &layout.local}) {
        if (group->n_layer == 0) continue;
        const uint64_t layer_bytes = group->pool_bytes() / 2 / static_cast<uint64_t>(group->n_layer);
        if (layer_bytes > ctx_->info().max_storage_buffer_range_bytes) {
            throw CapacityError("KV cache: one layer's K (" + std::to_string(layer_bytes) + " bytes) exceeds the largest " +
                                "storage binding of the Vulkan device (" +
                                std::to_string(ctx_->info().max_storage_buffer_range_bytes) +
                                " bytes); lower the context size (-c)");
        }
    }
    const int64_t kv_tokens = static_cast<int64_t>(layout.global.n_blocks) * layout.global.block_tokens;
    const uint64_t kv_bytes = layout.global.pool_bytes() + (layout.local.n_layer > 0 ? layout.local.pool_bytes() : 0);
    check_kv_cache_fits(ctx_->info(), weight_arena_->allocated_bytes(), kv_bytes, kv_tokens);
    try {
        allocate_kv_buffers(layout);
    } catch (const CapacityError& e) {
        throw CapacityError("the KV cache of " + std::to_string(kv_tokens) + " tokens (" + mib_text(kv_bytes) + "): " + e.what() +
                            "; lower the context size (-c)");
    }
}

void VulkanBackend::allocate_kv_buffers(const KvCacheLayout& layout) {
    kv_layout_ = layout;
    // A sequence's context is bounded by the global pool; the split count is fixed per recording.
    attention_max_context_ = static_cast<uint32_t>(layout.global.n_blocks * layout.global.block_tokens);
    // Steps attending in one split leave the partials unused.
    uint64_t partials_bytes = 4;
    const ModelConfig& c = model_->config();
    const uint32_t most_tile =
        attention_tile_tokens(*kernels_, static_cast<uint32_t>(c.n_head / c.n_head_kv), static_cast<uint32_t>(c.head_dim));
    for (uint32_t n = 1; n <= static_cast<uint32_t>(max_tokens_); ++n) {
        for (const uint32_t tile : {1u, most_tile}) {
            const uint32_t splits = attention_splits(n, tile);
            if (splits == 1) continue;
            partials_bytes = std::max(partials_bytes, attention_partials_bytes(n, static_cast<uint32_t>(c.n_head),
                                                                               static_cast<uint32_t>(c.head_dim), splits));
        }
    }
    attention_partials_ = Buffer(*ctx_, partials_bytes, Buffer::Kind::Device);
    attention_split_counters_ = finish_counters(
        *ctx_, attention_split_counter_count(static_cast<uint32_t>(max_tokens_), static_cast<uint32_t>(c.n_head)));
    for (Layer& l : layers_) {
        l.k_cache = Buffer();
        l.v_cache = Buffer();
    }
    kernels_->forget_descriptor_sets();
    for (size_t il = 0; il < layers_.size(); ++il) {
        Layer& l = layers_[il];
        l.kv_local = layout.layer_group[il] == KvGroup::Local;
        const KvLayout& group = l.kv_local ? layout.local : layout.global;
        const uint64_t layer_bytes = group.pool_bytes() / 2 / static_cast<uint64_t>(group.n_layer);
        l.k_cache = Buffer(*ctx_, layer_bytes, Buffer::Kind::Device);
        l.v_cache = Buffer(*ctx_, layer_bytes, Buffer::Kind::Device);
    }
}

void VulkanBackend::copy_kv_blocks(KvGroup group, std::span<const BlockCopy> copies) {
    if (copies.empty()) return;
    const bool local = group == KvGroup::Local;
    const KvLayout& layout = local ? kv_layout_.local : kv_layout_.global;
    const uint64_t block_bytes = layout.block_bytes() / 2 / static_cast<uint64_t>(layout.n_layer);
    std::vector<VkBufferCopy> regions;
    for (const BlockCopy& copy : copies) {
        regions.push_back({static_cast<uint64_t>(copy.src) * block_bytes, static_cast<uint64_t>(copy.dst) * block_bytes,
                           block_bytes});
    }
    ctx_->run_now([&](VkCommandBuffer cmd) {
        for (const Layer& l : layers_) {
            if (l.kv_local != local) continue;
            vkCmdCopyBuffer(cmd, l.k_cache.handle(), l.k_cache.handle(), static_cast<uint32_t>(regions.size()), regions.data());
            vkCmdCopyBuffer(cmd, l.v_cache.handle(), l.v_cache.handle(), static_cast<uint32_t>(regions.size()), regions.data());
        }
    });
}

void VulkanBackend::ensure_rope_positions(int n_positions) {
    if (n_positions <= rope_positions_) return;
    const int grown = std::max({n_positions, 2 * rope_positions_, 256});
    const ModelConfig& c = model_->config();
    // Both tables are made before either replaces one that recorded passes bind (as for the logits).
    Buffer global = upload_floats(*ctx_, rope_table(rope_params(c, model_->rope_freq_factors()), grown));
    Buffer local;
    if (c.has_local_layers()) local = upload_floats(*ctx_, rope_table(local_rope_params(c, model_->rope_freq_factors()), grown));
    kernels_->forget_descriptor_sets();
    rope_table_ = std::move(global);
    rope_table_local_ = std::move(local);  // empty without sliding-window layers
    rope_positions_ = grown;
}

// Writes the pass's host inputs; returns the number of tokens that want logits.
int VulkanBackend::fill_inputs(std::span<const BatchToken> tokens, const KvCache& cache) {
    int max_pos = 0;
    for (const BatchToken& t : tokens) max_pos = std::max(max_pos, t.pos);
    ensure_rope_positions(max_pos + 1);
    fill_kv_tables(tokens, cache.global(), step_.global_kv);
    if (cache.local() != nullptr) fill_kv_tables(tokens, *cache.local(), step_.local_kv);
    int32_t* ids = step_.tokens.data();
    int32_t* positions = step_.positions.data();
    int32_t* output_rows = step_.output_rows.data();
    int n_out = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
        ids[i] = tokens[i].token;
        positions[i] = tokens[i].pos;
        if (tokens[i].output) output_rows[n_out++] = static_cast<int32_t>(i);
    }
    ensure_logit_rows(n_out);
    return n_out;
}

// The block tables of the pass's sequences in one group, and each token's slot in them. A
// local group's released entries (before the window) are copied too; the attention kernel
// starts at the window and never reads them.
void VulkanBackend::fill_kv_tables(std::span<const BatchToken> tokens, const KvBlockPool& pool, KvTables& out) {
    const int block_tokens = pool.layout().block_tokens;
    std::map<SeqId, int32_t> table_of;  // where each sequence's block table starts in `tables`
    std::vector<int32_t> tables;
    for (const BatchToken& t : tokens) {
        if (table_of.count(t.seq) != 0) continue;
        table_of[t.seq] = static_cast<int32_t>(tables.size());
        const auto table = pool.block_table(t.seq);
        tables.insert(tables.end(), table.begin(), table.end());
    }
    if (tables.size() > out.tables.capacity()) {
        out.tables = staged_ints(tables.size() * 2);
        kernels_->forget_descriptor_sets();
    }
    std::memcpy(out.tables.data(), tables.data(), tables.size() * sizeof(int32_t));
    int32_t* slots = out.slots.data();
    int32_t* table_start = out.table_start.data();
    for (size_t i = 0; i < tokens.size(); ++i) {
        const BatchToken& t = tokens[i];
        const int32_t start = table_of[t.seq];
        table_start[i] = start;
        slots[i] = tables[static_cast<size_t>(start + t.pos / block_tokens)] * block_tokens + t.pos % block_tokens;
    }
}

void VulkanBackend::forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) {
    const auto n_vocab = static_cast<size_t>(model_->config().n_vocab);
    ctx_->finish_pending();  // before the inputs of a pass whose wait failed are overwritten
    gpu_times_.clear();
    submission_ = {};
    for (size_t begin = 0; begin < tokens.size();) {
        const auto pass = tokens.subspan(begin, std::min(tokens.size() - begin, static_cast<size_t>(pass_token_limit_)));
        run_pass(pass, cache, logits);
        logits += n_vocab * static_cast<size_t>(std::count_if(pass.begin(), pass.end(), [](const BatchToken& t) { return t.output; }));
        begin += pass.size();
    }
}

// A CPU driver has no watchdog, so its passes keep their full length.
void VulkanBackend::fit_passes_to_watchdog(int pass_tokens, std::chrono::steady_clock::duration elapsed) {
    if (ctx_->info().type == "cpu") return;
    pass_token_limit_ = fitted_pass_limit(pass_token_limit_, max_tokens_, pass_tokens,
                                          std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed));
}

void VulkanBackend::run_pass(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) {
    const auto n = static_cast<uint32_t>(tokens.size());
    // Filling the inputs may grow a buffer, which starts a new generation of recordings.
    const auto n_out = static_cast<uint32_t>(fill_inputs(tokens, cache));
    const Recording& recording = recording_for({n, n_out, attention_tile(tokens)});
    // Only the device's part counts for the watchdog: not recording, not pipeline creation.
    const auto start = std::chrono::steady_clock::now();
    ctx_->submit_and_wait(recording.cmd);
    fit_passes_to_watchdog(static_cast<int>(n), std::chrono::steady_clock::now() - start);
    const size_t bytes = static_cast<size_t>(n_out) * static_cast<size_t>(model_->config().n_vocab) * sizeof(float);
    if (bytes > 0) std::memcpy(logits, step_.logits_host.mapped(), bytes);
    collect_times(recording.query_ops);
    ++submission_.passes;
    submission_.dispatches += static_cast<int>(recording.counts.dispatches);
    submission_.barriers += static_cast<int>(recording.counts.barriers);
}

// The recorded pass of this shape, recorded now unless a pass of that shape was recorded since
// the buffers it names were last reallocated.
VulkanBackend::Recording& VulkanBackend::recording_for(const PassShape& shape) {
    const uint64_t generation = kernels_->generation();
    if (!replay_ || (!recordings_.empty() && recordings_.front().generation != generation)) forget_recordings();
    const auto found = std::find_if(recordings_.begin(), recordings_.end(), [&](const Recording& r) { return r.shape == shape; });
    if (found != recordings_.end()) {
        std::rotate(found, found + 1, recordings_.end());  // most recently used last
        ++submission_.replayed;
        return recordings_.back();
    }
    if (recordings_.size() == kMaxRecordings) {
        ctx_->free_command_buffer(recordings_.front().cmd);
        recordings_.erase(recordings_.begin());
    }
    const auto start = std::chrono::steady_clock::now();
    const uint64_t pipelines_before = kernels_->pipelines_created();
    // A shape recorded before binds pipelines that exist, unless what it binds has changed (then
    // the recording creates them as it goes), and is not noted again: each recording anew
    // (INFERSCOPE_VK_REPLAY=0) would otherwise cost the host two.
    const bool new_shape = shapes_with_pipelines_.insert(shape).second;
    if (new_shape) create_pipelines_ahead(shape);
    const uint64_t pipelines_ahead = kernels_->pipelines_created();
    kernels_->reset_counts();
    Recording r{recorded_pass(shape), shape, generation, {}, {}};
    if (new_shape && kernels_->pipelines_created() != pipelines_ahead) {
        ctx_->free_command_buffer(r.cmd);
        throw Error("internal: a pass bound a pipeline its notes missed");
    }
    submission_.pipelines_created += static_cast<int>(kernels_->pipelines_created() - pipelines_before);
    r.counts = kernels_->counts();
    r.query_ops = std::move(query_ops_);
    submission_.host_record_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    recordings_.push_back(std::move(r));
    return recordings_.back();
}

// A new command buffer holding `shape`'s pass (freed again where recording fails).
VkCommandBuffer VulkanBackend::recorded_pass(const PassShape& shape) {
    const VkCommandBuffer cmd = ctx_->allocate_command_buffer();
    try {
        const VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vk_check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
        record_pass(cmd, shape);
        vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    } catch (...) {
        ctx_->free_command_buffer(cmd);
        throw;
    }
    return cmd;
}

// The pipelines `shape`'s pass binds, noted then created side by side.
void VulkanBackend::create_pipelines_ahead(const PassShape& shape) {
    note_pipelines(shape);
    kernels_->create_noted_pipelines();
}

// Notes the pipelines `shape`'s pass binds by recording it once without its dispatches into a
// command buffer never submitted.
void VulkanBackend::note_pipelines(const PassShape& shape) {
    kernels_->note_pipelines_only(true);
    VkCommandBuffer scratch = VK_NULL_HANDLE;
    try {
        scratch = recorded_pass(shape);
    } catch (...) {
        kernels_->note_pipelines_only(false);
        throw;
    }
    kernels_->note_pipelines_only(false);
    ctx_->free_command_buffer(scratch);
}

// From kTiledMinTokens tokens or logit rows on, the products are tiles whatever their count, as
// the warm-up's first pass ran them for its tokens. A pass's layers depend on its token count
// alone (and its attention tile: one sequence's tokens, or one token per sequence); its output
// product on the rows wanting logits, all of the pass's (normed inside the mat-vec) or some
// (gathered first). The shapes are not marked as recorded, so that their first recording checks
// its notes again.
void VulkanBackend::prepare_passes(int most_tokens, int most_logit_rows) {
    if (!kernels_ahead_) return;
    const auto tiled = static_cast<int>(Kernels::kTiledMinTokens);
    const uint32_t prompt_tile = attention_tile(std::vector<BatchToken>{{0, 0, 0}, {0, 0, 1}});  // one sequence's tokens
    const int longest = std::min({most_tokens, max_tokens_, tiled - 1});
    for (int n = 2; n <= longest; ++n) note_pipelines({static_cast<uint32_t>(n), 1, prompt_tile});  // a prompt
    const int most_rows = std::min({most_logit_rows, max_tokens_, tiled});
    if (most_rows > 1) ensure_logit_rows(most_rows);
    for (int rows = 2; rows <= most_rows; ++rows) {
        const auto r = static_cast<uint32_t>(rows);
        note_pipelines({r, r, 1});  // a decode step of as many sequences
        // ... and one where a sequence's prompt ends beside the others' decode steps
        if (rows < max_tokens_) note_pipelines({r + 1, r, prompt_tile});
    }
    kernels_->create_noted_pipelines();
}

void VulkanBackend::forget_recordings() {
    for (const Recording& r : recordings_) ctx_->free_command_buffer(r.cmd);
    recordings_.clear();
}

// Copies every staged input to the buffer the shaders read, ahead of the first dispatch.
void VulkanBackend::record_input_copies(VkCommandBuffer cmd) {
    StepBuffers& s = step_;
    for (const StagedInts* input : {&s.tokens, &s.positions, &s.output_rows, &s.global_kv.slots, &s.global_kv.table_start,
                                    &s.global_kv.tables, &s.local_kv.slots, &s.local_kv.table_start, &s.local_kv.tables}) {
        if (input->host.handle() == VK_NULL_HANDLE) continue;  // a local group's, without local layers
        const VkBufferCopy region{0, 0, input->host.size_bytes()};
        vkCmdCopyBuffer(cmd, input->host.handle(), input->device.handle(), 1, &region);
    }
    kernels_->barrier(cmd);
}

void VulkanBackend::mark(VkCommandBuffer cmd, const char* op) {
    if (queries_ == VK_NULL_HANDLE || query_ops_.size() + 1 >= query_capacity_) return;
    if (op != nullptr) query_ops_.push_back(op);
    // Timestamp i + 1 closes op i: the barrier after every dispatch makes the ops consecutive.
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, static_cast<uint32_t>(query_ops_.size()));
}

void VulkanBackend::collect_times(const std::vector<const char*>& query_ops) {
    if (queries_ == VK_NULL_HANDLE || query_ops.empty()) return;
    std::vector<uint64_t> stamps(query_ops.size() + 1);
    vk_check(vkGetQueryPoolResults(ctx_->device(), queries_, 0, static_cast<uint32_t>(stamps.size()),
                                   stamps.size() * sizeof(uint64_t), stamps.data(), sizeof(uint64_t),
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults");
    for (size_t i = 0; i < query_ops.size(); ++i) {
        const auto ns = static_cast<int64_t>(static_cast<double>(stamps[i + 1] - stamps[i]) * ctx_->timestamp_period_ns());
        auto it = std::find_if(gpu_times_.begin(), gpu_times_.end(), [&](const OpTime& t) { return t.op == query_ops[i]; });
        if (it == gpu_times_.end()) {
            gpu_times_.push_back({query_ops[i], ns});
        } else {
            it->gpu_ns += ns;
        }
    }
}

void VulkanBackend::record_pass(VkCommandBuffer cmd, const PassShape& shape) {
    const ModelConfig& c = model_->config();
    const uint32_t n = shape.n, n_out = shape.n_out;
    query_ops_.clear();
    if (queries_ != VK_NULL_HANDLE) {
        vkCmdResetQueryPool(cmd, queries_, 0, query_capacity_);
    }
    record_input_copies(cmd);
    mark(cmd, nullptr);
    record_embed(*kernels_, cmd, token_embd_, step_.tokens.device.handle(), step_.x.handle(), n, c.embedding_scale);
    mark(cmd, "embed");
    for (const Layer& layer : layers_) record_layer(cmd, layer, shape);
    if (n_out > 0) {
        record_output_product(cmd, n, n_out);
        const VkBufferCopy region{0, 0, static_cast<uint64_t>(n_out) * static_cast<uint64_t>(c.n_vocab) * sizeof(float)};
        vkCmdCopyBuffer(cmd, step_.logits.handle(), step_.logits_host.handle(), 1, &region);
        VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0,
                             nullptr);
    }
}

// The logits of the n_out rows that want them. Where every row does (a decode step: the rows
// are then 0..n-1 in order) and the mat-vec takes them, the final norm runs inside the product;
// otherwise the wanted rows are gathered and normed first.
void VulkanBackend::record_output_product(VkCommandBuffer cmd, uint32_t n, uint32_t n_out) {
    const ModelConfig& c = model_->config();
    const DeviceMatrix& output = output_.parts.empty() ? token_embd_ : output_;
    const auto n_vocab = static_cast<uint32_t>(c.n_vocab);
    if (n_out == n && n <= kMatvecMaxTokens) {
        record_matvec(*kernels_, cmd, output, step_.x.handle(), step_.logits.handle(), n, n_vocab, false,
                      {output_norm_.handle(), c.rms_norm_eps});
        mark(cmd, "output");
        return;
    }
    record_rms_norm(*kernels_, cmd, step_.x.handle(), output_norm_.handle(), step_.normed.handle(),
                    step_.output_rows.device.handle(), true, n_out, static_cast<uint32_t>(c.n_embd), c.rms_norm_eps);
    mark(cmd, "output_norm");
    const Product product{&output, step_.logits.handle()};
    record_products(*kernels_, cmd, {&product, 1}, step_.normed.handle(), n_out, step_.encoded.handle());
    mark(cmd, "output");
}

void VulkanBackend::record_layer(VkCommandBuffer cmd, const Layer& l, const PassShape& shape) {
    const StepBuffers& s = step_;
    const uint32_t n = shape.n;
    const QkvPrepare prepare = qkv_prepare_op(l);
    if (!record_qkv(cmd, l, prepare, n)) {
        record_qkv_prepare(*kernels_, cmd, prepare, n);
        mark(cmd, l.local ? "qkv_prepare_local" : "qkv_prepare");
    }
    record_attention(cmd, l, shape);
    record_residual_product(cmd, l.wo, s.context.handle(), l.post_attention_norm, n, "attn_out", "attn_post_norm");
    record_ffn(cmd, l, n);
}

// The input rows RMS-normed by `weight` into step_.normed, for the products that read them.
void VulkanBackend::record_norm(VkCommandBuffer cmd, const Buffer& weight, uint32_t n, const char* op) {
    const ModelConfig& c = model_->config();
    record_rms_norm(*kernels_, cmd, step_.x.handle(), weight.handle(), step_.normed.handle(), step_.output_rows.device.handle(),
                    false, n, static_cast<uint32_t>(c.n_embd), c.rms_norm_eps);
    mark(cmd, op);
}

// q, k, v from the layer's input, and whether `prepare`'s step is done too: for a few tokens
// one mat-vec dispatch that norms its input, computes all three and prepares them (where the
// weights can share a dispatch and the device binds its buffers), else one per group that can;
// for more tokens the norm, then independent products sharing one barrier.
bool VulkanBackend::record_qkv(VkCommandBuffer cmd, const Layer& l, const QkvPrepare& prepare, uint32_t n) {
    const ModelConfig& c = model_->config();
    Kernels& k = *kernels_;
    const StepBuffers& s = step_;
    const std::array<const DeviceMatrix*, 3> weights = {&l.wq, &l.wk, &l.wv};
    const MatvecNorm norm{l.attn_norm.handle(), c.rms_norm_eps};
    if (n <= kMatvecMaxTokens && matvec_prepares_qkv(k, weights, prepare)) {
        record_matvec_qkv_prepared(k, cmd, weights, s.x.handle(), n, norm, prepare, s.finish_counters.handle());
        mark(cmd, "qkv");
        return true;
    }
    if (n <= kMatvecMaxTokens && matvec_groupable(weights)) {
        const std::array<VkBuffer, 3> outputs = {s.q.handle(), s.k.handle(), s.v.handle()};
        record_matvec_grouped(k, cmd, weights, s.x.handle(), outputs, n, norm);
        mark(cmd, "qkv");
        return false;
    }
    record_norm(cmd, l.attn_norm, n, "attn_norm");
    const std::array<Product, 3> products = {{{&l.wq, s.q.handle()}, {&l.wk, s.k.handle()}, {&l.wv, s.v.handle()}}};
    record_products(k, cmd, products, s.normed.handle(), n, s.encoded.handle());
    mark(cmd, "qkv");
    return false;
}

void VulkanBackend::record_residual_product(VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer input,
                                            const Buffer& post_norm, uint32_t n, const char* product_op,
                                            const char* norm_op) {
    const ModelConfig& c = model_->config();
    const auto n_embd = static_cast<uint32_t>(c.n_embd);
    const StepBuffers& s = step_;
    if (post_norm.handle() == VK_NULL_HANDLE) {
        const Product product{&w, s.x.handle()};
        record_products(*kernels_, cmd, {&product, 1}, input, n, s.encoded.handle(), true);
        mark(cmd, product_op);
        return;
    }
    if (n <= kMatvecMaxTokens && w.parts.size() == 1) {
        const MatvecPostNorm post{post_norm.handle(), c.rms_norm_eps, s.x.handle(), s.finish_counters.handle()};
        record_matvec_post_normed(*kernels_, cmd, w, input, s.projected.handle(), n, post);
        mark(cmd, product_op);
        return;
    }
    const Product product{&w, s.projected.handle()};
    record_products(*kernels_, cmd, {&product, 1}, input, n, s.encoded.handle());
    mark(cmd, product_op);
    record_rms_norm(*kernels_, cmd, s.projected.handle(), post_norm.handle(), s.x.handle(), s.output_rows.device.handle(),
                    false, n, n_embd, c.rms_norm_eps, NormOutput::AddTo);
    mark(cmd, norm_op);
}

// The gated FFN: for a few tokens gate and up in one mat-vec dispatch that norms its input and
// applies the activation; else the norm, both products and the activation apart.
void VulkanBackend::record_ffn(VkCommandBuffer cmd, const Layer& l, uint32_t n) {
    const ModelConfig& c = model_->config();
    const auto n_ff = static_cast<uint32_t>(c.n_ff);
    Kernels& k = *kernels_;
    const StepBuffers& s = step_;
    const char* activation = c.ffn_activation == FfnActivation::GeluTanh ? "geglu" : "swiglu";
    const std::array<const DeviceMatrix*, 2> gate_up = {&l.w_gate, &l.w_up};
    if (n <= kMatvecMaxTokens && matvec_fusable(gate_up)) {
        record_matvec_gated(k, cmd, l.w_gate, l.w_up, s.x.handle(), s.gate.handle(), n, c.ffn_activation,
                            {l.ffn_norm.handle(), c.rms_norm_eps});
        mark(cmd, activation);
    } else {
        record_norm(cmd, l.ffn_norm, n, "ffn_norm");
        const std::array<Product, 2> products = {{{&l.w_gate, s.gate.handle()}, {&l.w_up, s.up.handle()}}};
        record_products(k, cmd, products, s.normed.handle(), n, s.encoded.handle());
        mark(cmd, "gate_up");
        record_gated_activation(k, cmd, s.gate.handle(), s.up.handle(), n * n_ff, c.ffn_activation);
        mark(cmd, activation);
    }
    record_residual_product(cmd, l.w_down, s.gate.handle(), l.post_ffw_norm, n, "ffn_down", "ffn_post_norm");
}

uint32_t VulkanBackend::attention_tile(std::span<const BatchToken> tokens) const {
    const ModelConfig& c = model_->config();
    return attention_pass_tile(tokens, attention_tile_tokens(*kernels_, static_cast<uint32_t>(c.n_head / c.n_head_kv),
                                                             static_cast<uint32_t>(c.head_dim)));
}

uint32_t VulkanBackend::attention_splits(uint32_t n, uint32_t tile) const {
    const uint32_t tiles = (n + tile - 1) / tile;
    const ModelConfig& c = model_->config();
    const auto kv_workgroups =
        static_cast<uint32_t>(c.n_head_kv) * attention_head_parts(static_cast<uint32_t>(c.n_head / c.n_head_kv));
    return attention_split_count(attention_max_context_, kv_workgroups, tiles, kernels_->tuning().attention_workgroups);
}

// The layer's biases, Q/K norms, RoPE and cache store over the step's q, k, v.
QkvPrepare VulkanBackend::qkv_prepare_op(const Layer& l) const {
    const ModelConfig& c = model_->config();
    const StepBuffers& s = step_;
    QkvPrepare prepare;
    prepare.q = s.q.handle();
    prepare.k = s.k.handle();
    prepare.v = s.v.handle();
    prepare.bias = l.qkv_bias.handle();
    prepare.norms = l.qk_norms.handle();
    prepare.q_norm = l.q_norm;
    prepare.k_norm = l.k_norm;
    prepare.positions = s.positions.device.handle();
    prepare.rope_table = l.local ? rope_table_local_.handle() : rope_table_.handle();
    prepare.slots = (l.kv_local ? s.local_kv : s.global_kv).slots.device.handle();
    prepare.k_cache = l.k_cache.handle();
    prepare.v_cache = l.v_cache.handle();
    prepare.rope = {static_cast<uint32_t>(c.n_head), static_cast<uint32_t>(c.head_dim), static_cast<uint32_t>(c.rope_dim),
                    c.rope_style == RopeStyle::Neox};
    prepare.n_head_kv = static_cast<uint32_t>(c.n_head_kv);
    prepare.eps = c.rms_norm_eps;
    prepare.block_tokens = static_cast<uint32_t>(kv_layout_.block_tokens());
    prepare.kv_f16 = kv_layout_.dtype() == KvDtype::F16;
    return prepare;
}

void VulkanBackend::record_attention(VkCommandBuffer cmd, const Layer& l, const PassShape& shape) {
    const ModelConfig& c = model_->config();
    const uint32_t n = shape.n;
    const StepBuffers& s = step_;
    const KvTables& kv = l.kv_local ? s.local_kv : s.global_kv;
    const bool kv_f16 = kv_layout_.dtype() == KvDtype::F16;
    const auto block_tokens = static_cast<uint32_t>(kv_layout_.block_tokens());
    const auto head_dim = static_cast<uint32_t>(c.head_dim);
    const AttentionParams params{static_cast<uint32_t>(c.n_head), static_cast<uint32_t>(c.n_head_kv), head_dim, block_tokens,
                                 c.kq_scale(), l.local ? static_cast<uint32_t>(c.sliding_window) : 0u, kv_f16};
    AttentionBuffers buffers;
    buffers.q = s.q.handle();
    buffers.k_cache = l.k_cache.handle();
    buffers.v_cache = l.v_cache.handle();
    buffers.tables = kv.tables.device.handle();
    buffers.positions = s.positions.device.handle();
    buffers.table_start = kv.table_start.device.handle();
    buffers.partials = attention_partials_.handle();
    buffers.split_counters = attention_split_counters_.handle();
    buffers.context = s.context.handle();
    record_attention_split(*kernels_, cmd, buffers, n, params, attention_splits(n, shape.attention_tile), true,
                           AttentionBuild::Auto, shape.attention_tile);
    mark(cmd, l.local ? "attention_local" : "attention");
}

std::unique_ptr<Backend> make_vulkan_backend(std::shared_ptr<const Model> model, const VulkanBackendOptions& options) {
    ContextOptions context;
    context.validation = options.validation;
    context.max_storage_buffers_per_shader = options.max_storage_buffers_per_shader;
    context.max_shared_memory_bytes = options.max_shared_memory_bytes;
    context.without_subgroup_arithmetic = options.without_subgroup_arithmetic;
    // INFERSCOPE_VK_REPLAY=0 records every pass, to measure what replaying saves.
    const char* replay_env = std::getenv("INFERSCOPE_VK_REPLAY");
    VulkanBackendOptions chosen = options;
    chosen.replay = options.replay && (replay_env == nullptr || std::string(replay_env) != "0");
    return std::make_unique<VulkanBackend>(std::move(model), context, chosen);
}

int vulkan_validation_errors(const Backend& backend) {
    const auto* vulkan = dynamic_cast<const VulkanBackend*>(&backend);
    return vulkan == nullptr ? -1 : vulkan->validation_errors();
}

bool vulkan_encodes_quantized_inputs(const Backend& backend) {
    const auto* vulkan = dynamic_cast<const VulkanBackend*>(&backend);
    if (vulkan == nullptr) throw Error("vulkan_encodes_quantized_inputs: " + backend.name() + " is not a Vulkan backend");
    return vulkan->encodes_quantized_inputs();
}

double vulkan_read_bandwidth(Backend& backend) {
    auto* vulkan = dynamic_cast<VulkanBackend*>(&backend);
    if (vulkan == nullptr) throw Error("vulkan_read_bandwidth: " + backend.name() + " is not a Vulkan backend");
    return vulkan->measure_read_bandwidth().bytes_per_second;
}

VulkanWeightMemory vulkan_weight_memory(const Backend& backend) {
    const auto* vulkan = dynamic_cast<const VulkanBackend*>(&backend);
    if (vulkan == nullptr) throw Error("vulkan_weight_memory: " + backend.name() + " is not a Vulkan backend");
    const BufferArena& arena = vulkan->weight_arena();
    return {arena.allocations(), arena.allocated_bytes(), arena.unified()};
}

}  // namespace inferscope::gpu
