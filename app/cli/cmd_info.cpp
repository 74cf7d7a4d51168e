// `info`: what a model file is, read without running it.
#include <cstdio>

#include "app/cli/cli_common.h"
#include "engine/chat/conversation.h"
#include "engine/kv/kv_block_pool.h"

namespace inferscope::cli {
namespace {

nlohmann::json local_layers_json(const ModelConfig& c) {
    if (!c.has_local_layers()) return nullptr;
    std::vector<int> local;
    for (int layer = 0; layer < c.n_layer; ++layer) {
        if (c.is_local_layer(layer)) local.push_back(layer);
    }
    return {{"window_tokens", c.sliding_window}, {"local_layers", local}, {"rope_freq_base_local", c.rope_freq_base_local}};
}

nlohmann::json chat_template_json(const GgufFile& file) {
    const auto text = chat::model_chat_template(file);
    if (!text) return nullptr;
    return {{"family", chat::chat_template_family_name(chat::chat_template_family(*text))}, {"bytes", text->size()}};
}

nlohmann::json info_json(const Model& model) {
    const ModelConfig& c = model.config();
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : model.file().tensors()) {
        tensors.push_back({{"name", t.name}, {"type", ggml_type_name(t.type)}, {"shape", t.dims.to_vector()}, {"bytes", t.byte_count}});
    }
    return {
        {"file", model.file().path()},
        {"file_bytes", model.file().file_size()},
        {"file_held", model.file().holding_name()},
        {"gguf_version", model.file().version()},
        {"synthetic", model.is_synthetic()},
        {"name", c.name},
        {"architecture", c.architecture},
        {"parameters", model.parameter_count()},
        {"n_layer", c.n_layer},
        {"n_embd", c.n_embd},
        {"n_head", c.n_head},
        {"n_head_kv", c.n_head_kv},
        {"head_dim", c.head_dim},
        {"n_ff", c.n_ff},
        {"n_vocab", c.n_vocab},
        {"context_length", c.context_length},
        {"rope_freq_base", c.rope_freq_base},
        {"rope_style", c.rope_style == RopeStyle::Neox ? "neox" : "normal"},
        {"tied_output", c.tied_output},
        {"rope_freq_factors", !model.rope_freq_factors().empty()},
        {"qk_norm", c.has_qk_norm},
        {"post_norms", c.has_post_norms},
        {"ffn_activation", c.ffn_activation == FfnActivation::GeluTanh ? "geglu (tanh)" : "swiglu"},
        {"embedding_scale", c.embedding_scale},
        {"sliding_window", local_layers_json(c)},
        {"chat_template", chat_template_json(model.file())},
        {"kv_bytes_per_token", {{"f16", c.kv_bytes_per_token(2)}, {"f32", c.kv_bytes_per_token(4)}}},
        {"tokenizer", {{"kind", model.tokenizer().kind_name()},
                       {"pre", model.tokenizer().pre_tokenizer()},
                       {"vocab_size", model.tokenizer().vocab_size()},
                       {"bos_id", model.tokenizer().bos_id()},
                       {"eos_id", model.tokenizer().eos_id()},
                       {"add_bos", model.tokenizer().add_bos()}}},
        {"tensors", tensors},
    };
}

void print_info_text(const nlohmann::json& j) {
    std::printf("file:            %s (%llu bytes)%s\n", terminal_safe(j["file"].get<std::string>()).c_str(),
                static_cast<unsigned long long>(j["file_bytes"].get<uint64_t>()),
                j["synthetic"].get<bool>() ? "  [synthetic: random weights]" : "");
    std::printf("held:            %s (INFERSCOPE_WEIGHTS=map|copy to choose)\n", j["file_held"].get<std::string>().c_str());
    std::printf("name:            %s\n", terminal_safe(j["name"].get<std::string>()).c_str());
    std::printf("architecture:    %s\n", j["architecture"].get<std::string>().c_str());
    std::printf("parameters:      %llu\n", static_cast<unsigned long long>(j["parameters"].get<uint64_t>()));
    std::printf("layers:          %d, n_embd %d, heads %d (KV %d, head dim %d), ffn %d\n", j["n_layer"].get<int>(),
                j["n_embd"].get<int>(), j["n_head"].get<int>(), j["n_head_kv"].get<int>(), j["head_dim"].get<int>(),
                j["n_ff"].get<int>());
    std::printf("vocabulary:      %d tokens, tokenizer %s%s\n", j["n_vocab"].get<int>(),
                j["tokenizer"]["kind"].get<std::string>().c_str(),
                j["tokenizer"]["pre"].get<std::string>().empty()
                    ? ""
                    : (" (pre-tokenizer " + terminal_safe(j["tokenizer"]["pre"].get<std::string>()) + ")").c_str());
    std::printf("context length:  %d tokens, RoPE %s base %g\n", j["context_length"].get<int>(),
                j["rope_style"].get<std::string>().c_str(), j["rope_freq_base"].get<double>());
    std::printf("blocks:          %s FFN%s%s%s\n", j["ffn_activation"].get<std::string>().c_str(),
                j["qk_norm"].get<bool>() ? ", per-head Q/K norms" : "", j["post_norms"].get<bool>() ? ", post-norms" : "",
                j["rope_freq_factors"].get<bool>() ? ", RoPE frequency factors (rope_freqs)" : "");
    if (!j["sliding_window"].is_null()) {
        const auto& w = j["sliding_window"];
        std::printf("sliding window:  %d tokens on %zu of %d layers (RoPE base %g there); the others are global\n",
                    w["window_tokens"].get<int>(), w["local_layers"].size(), j["n_layer"].get<int>(),
                    w["rope_freq_base_local"].get<double>());
    }
    if (j["chat_template"].is_null()) {
        std::printf("chat template:   none (generate completes the text as it is)\n");
    } else {
        std::printf("chat template:   %s family, %zu bytes (generate --chat, chat)\n",
                    j["chat_template"]["family"].get<std::string>().c_str(), j["chat_template"]["bytes"].get<size_t>());
    }
    std::printf("KV bytes/token:  %llu (f16), %llu (f32)\n",
                static_cast<unsigned long long>(j["kv_bytes_per_token"]["f16"].get<uint64_t>()),
                static_cast<unsigned long long>(j["kv_bytes_per_token"]["f32"].get<uint64_t>()));
    std::printf("\n%-32s %-6s %-22s %14s\n", "tensor", "type", "shape", "bytes");
    for (const auto& t : j["tensors"]) {
        std::string shape = "[";
        for (size_t i = 0; i < t["shape"].size(); ++i) shape += (i ? ", " : "") + std::to_string(t["shape"][i].get<uint64_t>());
        shape += "]";
        std::printf("%-32s %-6s %-22s %14llu\n", terminal_safe(t["name"].get<std::string>()).c_str(), t["type"].get<std::string>().c_str(),
                    shape.c_str(), static_cast<unsigned long long>(t["bytes"].get<uint64_t>()));
    }
}

}  // namespace

void add_info_command(CLI::App& app) {
    auto options = std::make_shared<ModelOptions>();
    CLI::App* cmd = app.add_subcommand("info", "architecture, parameters, tensors, KV bytes per token");
    add_model_options(*cmd, *options, false);
    cmd->callback([options] {
        const auto model = load_model(*options);
        const nlohmann::json j = info_json(*model);
        if (options->json) {
            print_json(j);
        } else {
            print_info_text(j);
        }
    });
}

}  // namespace inferscope::cli
