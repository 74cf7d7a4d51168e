// `make-model`: write a synthetic GGUF of any shape (presets or explicit dimensions).
#include <cstdio>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/synth/synthetic_model.h"

namespace inferscope::cli {
namespace {

struct MakeModelOptions {
    std::string preset = "default";
    std::string output;
    std::string dtype = "f32";
    std::string arch;
    int layers = 0, embd = 0, heads = 0, kv_heads = 0, ff = 0, vocab = 0, ctx_len = 0;
    uint64_t seed = 1;
    std::string vocab_file;
    std::string chat_template_file;
    int head_dim = 0;
    std::vector<int> outlier_dims;
    float outlier_scale = 40.0f;
    bool outlier_inputs = false;
    float weight_std = 0;  // 0: the preset's
    bool tied = false;
    bool untied = false;
};

SyntheticModelSpec spec_from(const MakeModelOptions& o) {
    SyntheticModelSpec s = synthetic_preset(o.preset);
    if (const KQuantMixTraits* mix = k_quant_mix_named(o.dtype)) {
        s.k_quant_mix = mix->mix;
        s.dtype = mix->base;  // as llama.cpp's presets are named after their base type
    } else {
        const auto dtype = ggml_type_from_name(o.dtype);
        if (!dtype) throw InvalidArgument("unknown weight type \"" + o.dtype + "\"");
        s.dtype = *dtype;
    }
    if (!o.arch.empty()) s.architecture = o.arch;
    const auto override_if_set = [](int value, int& field) {
        if (value > 0) field = value;
    };
    override_if_set(o.layers, s.n_layer);
    override_if_set(o.embd, s.n_embd);
    override_if_set(o.heads, s.n_head);
    override_if_set(o.kv_heads, s.n_head_kv);
    override_if_set(o.ff, s.n_ff);
    override_if_set(o.vocab, s.n_vocab);
    override_if_set(o.ctx_len, s.context_length);
    if (o.tied) s.tied_output = true;
    if (o.untied) s.tied_output = false;
    s.seed = o.seed;
    s.vocab_path = o.vocab_file;
    if (o.head_dim > 0) s.head_dim = o.head_dim;
    if (!o.chat_template_file.empty()) s.chat_template = read_text_file(o.chat_template_file);
    s.outlier_dims = o.outlier_dims;
    s.outlier_scale = o.outlier_scale;
    s.outliers_reach_linear_inputs = o.outlier_inputs;
    if (o.weight_std > 0) s.weight_std = o.weight_std;
    if (o.preset == "default" && s.name == "inferscope-builtin-synthetic") s.name = "inferscope-synthetic";
    return s;
}

}  // namespace

void add_make_model_command(CLI::App& app) {
    auto o = std::make_shared<MakeModelOptions>();
    std::string presets;
    for (auto name : synthetic_preset_names()) presets += (presets.empty() ? "" : ", ") + std::string(name);
    CLI::App* cmd = app.add_subcommand("make-model", "write a synthetic GGUF model with seeded random weights");
    cmd->add_option("-o,--output", o->output, "output .gguf path")->required();
    cmd->add_option("--preset", o->preset, "shape preset: " + presets)->capture_default_str();
    cmd->add_option(
           "--dtype", o->dtype,
           "type of the 2-D weights: f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, iq4_nl, iq4_xs, ..., or q4_k_m / q5_k_m (the "
           "mix llama.cpp's Q4_K_M / Q5_K_M writes: Q4_K / Q5_K, Q6_K for the output and some layers' attn_v and "
           "ffn_down, Q5_0 / Q5_1 and Q8_0 where 256 does not divide a row)")
        ->capture_default_str();
    cmd->add_option("--arch", o->arch, "llama, qwen2, qwen3 or gemma3 (default: the preset's)");
    cmd->add_option("--layers", o->layers, "block count");
    cmd->add_option("--embd", o->embd, "embedding length");
    cmd->add_option("--heads", o->heads, "attention heads");
    cmd->add_option("--kv-heads", o->kv_heads, "KV heads (GQA when fewer than heads)");
    cmd->add_option("--ff", o->ff, "feed-forward length");
    cmd->add_option("--n-vocab", o->vocab, "vocabulary size of the byte-level tokenizer");
    cmd->add_option("--ctx-len", o->ctx_len, "context length stored in the file");
    cmd->add_flag("--tied", o->tied, "tie the output projection to the embeddings");
    cmd->add_flag("--untied", o->untied, "write a separate output.weight");
    cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
    cmd->add_option("--vocab", o->vocab_file, "copy the tokenizer from this GGUF (sets the vocabulary size)");
    cmd->add_option("--chat-template", o->chat_template_file, "write this Jinja file as tokenizer.chat_template");
    cmd->add_option("--head-dim", o->head_dim, "head dimension (attention.key_length) when it is not embd / heads");
    cmd->add_option("--outlier-dims", o->outlier_dims, "residual dimensions to make activation outliers")->delimiter(',');
    cmd->add_option("--outlier-scale", o->outlier_scale, "scale of the outlier dimensions")->capture_default_str();
    cmd->add_option("--weight-std", o->weight_std,
                    "standard deviation of the 2-D weights (default: the preset's, 0.02); larger values make "
                    "sharper next-token distributions")
        ->check(non_negative());
    cmd->add_flag("--outlier-inputs", o->outlier_inputs,
                  "let the outliers through the block norms into the linear layers' inputs (default: the norms "
                  "scale them down)");
    cmd->callback([o] {
        const SyntheticModelSpec spec = spec_from(*o);
        const GgufWriter writer = build_synthetic_model(spec);
        writer.write_file(o->output);
        std::fprintf(stderr, "wrote %s: %s, %d layers, n_embd %d, %s weights (synthetic, seed %llu)\n", o->output.c_str(),
                     spec.architecture.c_str(), spec.n_layer, spec.n_embd, o->dtype.c_str(),
                     static_cast<unsigned long long>(spec.seed));
    });
}

}  // namespace inferscope::cli
