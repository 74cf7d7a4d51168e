#include "engine/model/model.h"

#include <cstdint>

#include "engine/core/error.h"
#include "engine/formats/quant.h"
#include "engine/model/architecture.h"

namespace inferscope {

std::shared_ptr<const Model> Model::load(const std::string& path) { return from_gguf(GgufFile::open(path)); }

std::shared_ptr<const Model> Model::from_gguf(GgufFile file) {
    return std::shared_ptr<const Model>(new Model(std::move(file)));
}

Model::Model(GgufFile file) : file_(std::make_shared<const GgufFile>(std::move(file))) {
    config_ = architecture_for(*file_).read_config(*file_);
    bind_weights();
    tokenizer_ = Tokenizer::from_gguf(*file_);
    if (tokenizer_->vocab_size() > config_.n_vocab) {
        throw GgufError(file_->path(), file_->metadata_offset("tokenizer.ggml.tokens"),
                        "the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                            " tokens but the embedding only " + std::to_string(config_.n_vocab) + " rows");
    }
}

WeightMatrix Model::matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const GgufTensorInfo* info = file_->find_tensor(name);
    if (info == nullptr) throw GgufError(file_->path(), file_->data_offset(), "required tensor \"" + name + "\" is missing");
    const auto& traits = ggml_type_traits(info->type);
    if (!traits.weight_supported) {
        throw UnsupportedError(file_->path() + ": tensor \"" + name + "\" has type " + std::string(traits.name) +
                               ", which is not supported (supported: " + supported_weight_type_names() + ")");
    }
    const auto offset = file_->data_offset() + info->offset;
    if (info->dims.size() != 2 || info->dims[0] != static_cast<uint64_t>(cols) ||
        info->dims[1] != static_cast<uint64_t>(rows)) {
        throw GgufError(file_->path(), offset,
                        "tensor \"" + name + "\" has shape " + info->shape_string() + ", expected [" +
                            std::to_string(cols) + ", " + std::to_string(rows) + "] for this " + config_.architecture +
                            " configuration");
    }
    if (info->type == GgmlType::F32 && reinterpret_cast<uintptr_t>(info->data.data()) % alignof(float) != 0) {
        throw UnsupportedError(file_->path() + ": F32 tensor \"" + name + "\" is not 4-byte aligned in the file");
    }
    WeightMatrix w;
    w.name = name;
    w.type = info->type;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = ggml_row_bytes(info->type, static_cast<uint64_t>(cols));
    w.data = info->data.data();
    return w;
}

std::vector<float> Model::vector(const std::string& name, int64_t length, bool required) const {
    const GgufTensorInfo* info = file_->find_tensor(name);
    if (info == nullptr) {
        if (!required) return {};
        throw GgufError(file_->path(), file_->data_offset(), "required tensor \"" + name + "\" is missing");
    }
    if (info->element_count != static_cast<uint64_t>(length) || info->dims[0] != static_cast<uint64_t>(length)) {
        throw GgufError(file_->path(), file_->data_offset() + info->offset,
                        "tensor \"" + name + "\" has shape " + info->shape_string() + ", expected [" +
                            std::to_string(length) + "]");
    }
    if (!ggml_type_traits(info->type).weight_supported) {
        throw UnsupportedError(file_->path() + ": tensor \"" + name + "\" has type " +
                               std::string(ggml_type_name(info->type)) + ", which is not supported (supported: " +
                               supported_weight_type_names() + ")");
    }
    std::vector<float> values(static_cast<size_t>(length));
    dequantize_row(info->type, info->data.data(), values.data(), length);
    return values;
}

void Model::bind_weights() {
    const ModelConfig& c = config_;
    token_embd_ = matrix("token_embd.weight", c.n_vocab, c.n_embd);
    output_ = c.tied_output ? token_embd_ : matrix("output.weight", c.n_vocab, c.n_embd);
    output_norm_ = vector("output_norm.weight", c.n_embd);
    rope_freq_factors_ = vector("rope_freqs.weight", c.rope_dim / 2, /*required=*/false);
    layers_.resize(static_cast<size_t>(c.n_layer));
    for (int l = 0; l < c.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        LayerWeights& L = layers_[static_cast<size_t>(l)];
        L.attn_norm = vector(p + "attn_norm.weight", c.n_embd);
        L.wq = matrix(p + "attn_q.weight", c.q_dim(), c.n_embd);
        L.wk = matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd);
        L.wv = matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd);
        L.wo = matrix(p + "attn_output.weight", c.n_embd, c.q_dim());
        L.bq = vector(p + "attn_q.bias", c.q_dim(), c.has_qkv_bias);
        L.bk = vector(p + "attn_k.bias", c.kv_dim(), c.has_qkv_bias);
        L.bv = vector(p + "attn_v.bias", c.kv_dim(), c.has_qkv_bias);
        if (c.has_qk_norm) {
            L.q_norm = vector(p + "attn_q_norm.weight", c.head_dim);
            L.k_norm = vector(p + "attn_k_norm.weight", c.head_dim);
        }
        if (c.has_post_norms) {
            L.post_attention_norm = vector(p + "post_attention_norm.weight", c.n_embd);
            L.post_ffw_norm = vector(p + "post_ffw_norm.weight", c.n_embd);
        }
        L.ffn_norm = vector(p + "ffn_norm.weight", c.n_embd);
        L.w_gate = matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd);
        L.w_up = matrix(p + "ffn_up.weight", c.n_ff, c.n_embd);
        L.w_down = matrix(p + "ffn_down.weight", c.n_embd, c.n_ff);
    }
}

WeightMatrix* Model::find_matrix_mutable(const std::string& name) {
    for (LayerWeights& L : layers_) {
        for (WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
            if (w->name == name) return w;
        }
    }
    if (token_embd_.name == name) return &token_embd_;
    if (!config_.tied_output && output_.name == name) return &output_;
    return nullptr;
}

const WeightMatrix* Model::find_matrix(const std::string& name) const {
    return const_cast<Model*>(this)->find_matrix_mutable(name);
}

std::shared_ptr<const Model> Model::with_replaced_weights(const std::shared_ptr<const Model>& base,
                                                          std::vector<ReplacementWeight> replacements) {
    if (!base) throw InvalidArgument("with_replaced_weights: no base model");
    std::shared_ptr<Model> derived(new Model());
    derived->file_ = base->file_;
    derived->config_ = base->config_;
    derived->tokenizer_ = base->tokenizer_;
    derived->token_embd_ = base->token_embd_;
    derived->output_ = base->output_;
    derived->output_norm_ = base->output_norm_;
    derived->rope_freq_factors_ = base->rope_freq_factors_;
    derived->layers_ = base->layers_;
    // Views the base had already replaced point into these shared buffers, which stay alive.
    derived->owned_weights_ = base->owned_weights_;
    for (ReplacementWeight& r : replacements) {
        WeightMatrix* w = derived->find_matrix_mutable(r.name);
        if (w == nullptr) throw InvalidArgument("cannot replace \"" + r.name + "\": the model has no such 2-D weight");
        if (!ggml_type_traits(r.type).weight_supported) {
            throw InvalidArgument("cannot replace \"" + r.name + "\" with type " + std::string(ggml_type_name(r.type)) +
                                  " (supported: " + supported_weight_type_names() + ")");
        }
        if (w->cols % ggml_type_traits(r.type).block_elements != 0) {
            throw InvalidArgument("cannot replace \"" + r.name + "\" with type " + std::string(ggml_type_name(r.type)) +
                                  ": its rows of " + std::to_string(w->cols) + " are not whole blocks");
        }
        const uint64_t row_bytes = ggml_row_bytes(r.type, static_cast<uint64_t>(w->cols));
        if (r.bytes.size() != row_bytes * static_cast<uint64_t>(w->rows)) {
            throw InvalidArgument("replacement for \"" + r.name + "\" has " + std::to_string(r.bytes.size()) +
                                  " bytes, expected " + std::to_string(row_bytes * static_cast<uint64_t>(w->rows)));
        }
        w->type = r.type;
        w->row_bytes = row_bytes;
        auto buffer = std::make_shared<const std::vector<uint8_t>>(std::move(r.bytes));
        w->data = buffer->data();
        derived->owned_weights_.push_back(std::move(buffer));
    }
    if (derived->config_.tied_output) derived->output_ = derived->token_embd_;
    return derived;
}

void Model::require_file_unchanged() const {
    if (file_->changed_on_disk()) {
        throw Error(file_->path() + ": the model file changed on disk while in use (truncated or rewritten); open it again");
    }
}

uint64_t Model::parameter_count() const {
    uint64_t total = 0;
    for (const auto& t : file_->tensors()) total += t.element_count;
    return total;
}

bool Model::is_synthetic() const { return file_->get_bool("inferscope.synthetic", false); }

}  // namespace inferscope
