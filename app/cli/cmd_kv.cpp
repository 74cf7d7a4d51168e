// `kv`: KV cache bytes per token from the formula next to the paged pool's accounting after
// really running tokens; layouts of users x tokens; the MHA / GQA / MQA what-if.
#include <algorithm>
#include <cstdio>
#include <string>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/instruments/kv_accounting.h"

namespace inferscope::cli {
namespace {

struct KvCliOptions {
    ModelOptions model;
    int tokens = 295;
    std::string layouts = "32x2048,64x1024,128x512";
};

constexpr double kMiB = 1024.0 * 1024.0;

nlohmann::json report_json(const Model& model, const KvAccountingReport& r) {
    nlohmann::json layouts = nlohmann::json::array();
    for (const KvLayoutRow& l : r.layouts) {
        layouts.push_back({{"users", l.layout.users},
                           {"tokens_per_user", l.layout.tokens_per_user},
                           {"resident_tokens", l.resident_tokens},
                           {"bytes", l.bytes},
                           {"mib", l.bytes / kMiB}});
    }
    nlohmann::json what_if = nlohmann::json::array();
    for (const KvAttentionWhatIf& w : r.what_if) {
        what_if.push_back({{"attention", w.attention},
                           {"kv_heads", w.kv_heads},
                           {"bytes_per_token", w.bytes_per_token},
                           {"ratio_to_model", w.ratio_to_model},
                           {"is_model", w.is_model}});
    }
    nlohmann::json groups = nlohmann::json::array();
    for (const KvGroupUsage& g : r.pool_groups) {
        groups.push_back({{"group", kv_group_name(g.group)},
                          {"layers", g.layers},
                          {"window_tokens", g.window_tokens},
                          {"bytes_per_token", g.bytes_per_token},
                          {"pool_blocks", g.pool_blocks},
                          {"pool_bytes", g.pool_bytes},
                          {"blocks_used", g.blocks_used},
                          {"bytes_in_use", g.bytes_in_use},
                          {"bytes_reserved", g.bytes_reserved}});
    }
    return {{"model", model.config().name},
            {"kv_dtype", kv_dtype_name(r.dtype)},
            {"shape", {{"layers", r.n_layer}, {"heads", r.n_head}, {"kv_heads", r.n_head_kv}, {"head_dim", r.head_dim}}},
            {"formula_bytes_per_token", r.formula_bytes_per_token},
            {"tokens", r.tokens},
            {"formula_bytes", r.formula_bytes},
            {"layer_tensor_shape", {1, r.n_head_kv, r.tokens, r.head_dim}},
            {"layer_tensor_bytes", r.layer_tensor_bytes},
            {"allocator",
             {{"bytes_in_use", r.allocator_bytes_in_use},
              {"bytes_reserved", r.allocator_bytes_reserved},
              {"block_rounding_waste_bytes", r.block_rounding_waste_bytes},
              {"block_tokens", r.block_tokens},
              {"blocks_used", r.blocks_used}}},
            {"pool_groups", groups},
            {"layouts", layouts},
            {"what_if", what_if},
            {"sliding_window",
             {{"window_tokens", r.window.window},
              {"local_layers", r.window.local_layers},
              {"global_layers", r.window.global_layers},
              {"layer_bytes_per_token", r.window.layer_bytes_per_token},
              {"global_bytes", r.window.global_bytes},
              {"local_bytes", r.window.local_bytes},
              {"windowed_bytes", r.window.windowed_bytes()},
              {"all_global_bytes", r.window.all_global_bytes}}}};
}

// Where a model has local layers: what they need at the run's length and further out.
void print_window_split(const ModelConfig& config, const KvAccountingReport& r) {
    const KvWindowSplit& w = r.window;
    if (w.local_layers == 0) return;
    std::printf("\nsliding window: %d local layers keep the last %d tokens, %d global layers keep all; %.0f bytes/token "
                "per layer\n",
                w.local_layers, w.window, w.global_layers, w.layer_bytes_per_token);
    std::printf("\n| tokens | global layers MiB | local layers MiB | with the window MiB | all global MiB |\n"
                "|---:|---:|---:|---:|---:|\n");
    for (int64_t tokens = r.tokens; tokens <= static_cast<int64_t>(config.context_length) * 2; tokens *= 4) {
        const KvWindowSplit at = kv_window_split(config, r.dtype, std::min<int64_t>(tokens, config.context_length));
        std::printf("| %lld | %.2f | %.2f | %.2f | %.2f |\n", static_cast<long long>(at.tokens), at.global_bytes / kMiB,
                    at.local_bytes / kMiB, at.windowed_bytes() / kMiB, at.all_global_bytes / kMiB);
        if (at.tokens == config.context_length) break;
    }
}

void print_report(const KvAccountingReport& r) {
    std::printf("shape: %d layers, %d query heads, %d KV heads x %d, KV %s\n\n", r.n_layer, r.n_head, r.n_head_kv, r.head_dim,
                kv_dtype_name(r.dtype));
    std::printf("| %d tokens | formula | allocator (paged pool) |\n|---|---:|---:|\n", r.tokens);
    std::printf("| bytes/token | %.0f | %.0f |\n", r.formula_bytes_per_token,
                static_cast<double>(r.allocator_bytes_in_use) / r.tokens);
    std::printf("| bytes in use | %.0f | %llu |\n", r.formula_bytes, static_cast<unsigned long long>(r.allocator_bytes_in_use));
    std::printf("\nper layer: K and V tensors (1, %d, %d, %d), %llu bytes each\n", r.n_head_kv, r.tokens, r.head_dim,
                static_cast<unsigned long long>(r.layer_tensor_bytes));
    std::printf("block rounding: %d blocks of %d tokens reserve %llu bytes; %llu bytes of the last block unused\n",
                r.blocks_used, r.block_tokens, static_cast<unsigned long long>(r.allocator_bytes_reserved),
                static_cast<unsigned long long>(r.block_rounding_waste_bytes));
    std::printf("\n| pool | layers | window | bytes/token | pool blocks | pool MiB | blocks used | bytes in use | bytes reserved |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const KvGroupUsage& g : r.pool_groups) {
        std::printf("| %s | %d | %s | %llu | %d | %.2f | %d | %llu | %llu |\n", kv_group_name(g.group), g.layers,
                    g.window_tokens > 0 ? std::to_string(g.window_tokens).c_str() : "-",
                    static_cast<unsigned long long>(g.bytes_per_token), g.pool_blocks, static_cast<double>(g.pool_bytes) / kMiB,
                    g.blocks_used, static_cast<unsigned long long>(g.bytes_in_use),
                    static_cast<unsigned long long>(g.bytes_reserved));
    }
    std::printf("\n| users x tokens | resident tokens | bytes | MiB |\n|---|---:|---:|---:|\n");
    for (const KvLayoutRow& l : r.layouts) {
        std::printf("| %d x %d | %lld | %.0f | %.2f |\n", l.layout.users, l.layout.tokens_per_user,
                    static_cast<long long>(l.resident_tokens), l.bytes, l.bytes / kMiB);
    }
    std::printf("\n| attention | KV heads | bytes/token | vs this model |\n|---|---:|---:|---:|\n");
    for (const KvAttentionWhatIf& w : r.what_if) {
        std::printf("| %s%s | %d | %.0f | %.3gx |\n", w.attention.c_str(), w.is_model ? " (this model)" : "", w.kv_heads,
                    w.bytes_per_token, w.ratio_to_model);
    }
}

void run(KvCliOptions o) {
    const std::vector<KvUserLayout> layouts = parse_kv_user_layouts(o.layouts);
    const auto model = load_model(o.model);
    if (o.tokens > model->config().context_length) {
        throw CapacityError(std::to_string(o.tokens) + " tokens do not fit in the model's context of " +
                            std::to_string(model->config().context_length) + " tokens (lower --tokens)");
    }
    if (o.model.ctx == 0) o.model.ctx = o.tokens;
    InferenceSession session(model, session_options(o.model), make_backend(o.model, model, /*op_timestamps=*/false));
    const KvAccountingReport report = measure_kv_accounting(session, o.tokens, layouts);
    if (o.model.json) {
        print_json(report_json(*model, report));
    } else {
        print_report(report);
        print_window_split(model->config(), report);
    }
}

}  // namespace

void add_kv_command(CLI::App& app) {
    auto o = std::make_shared<KvCliOptions>();
    CLI::App* cmd = app.add_subcommand("kv", "KV cache bytes: the formula against the paged pool, layouts, MHA/GQA/MQA");
    add_model_options(*cmd, o->model, true);
    cmd->add_option("--tokens", o->tokens, "tokens to run through the model")->check(positive())->capture_default_str();
    cmd->add_option("--layout", o->layouts, "users x tokens per user, comma-separated")->capture_default_str();
    cmd->callback([o] { run(*o); });
}

}  // namespace inferscope::cli
