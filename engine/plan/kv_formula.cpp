#include "engine/plan/kv_formula.h"

#include <algorithm>

#include "engine/model/model_config.h"
#include "engine/plan/memory_budget.h"

namespace inferscope {
namespace {

double bytes_per_token_with(const ModelConfig& config, int kv_heads, KvDtype dtype) {
    BudgetModel shape = budget_model_from_config(config.name, 0.0, config);
    shape.kv_heads = kv_heads;
    return kv_bytes_per_token(shape, kv_dtype_bytes(dtype));
}

}  // namespace

double formula_kv_bytes_per_token(const ModelConfig& config, KvDtype dtype) {
    return bytes_per_token_with(config, config.n_head_kv, dtype);
}

double formula_kv_bytes_per_token(const ModelConfig& config, int kv_heads, KvDtype dtype) {
    return bytes_per_token_with(config, kv_heads, dtype);
}

std::vector<KvAttentionWhatIf> kv_attention_what_if(const ModelConfig& config, KvDtype dtype) {
    const double own = formula_kv_bytes_per_token(config, dtype);
    std::vector<KvAttentionWhatIf> rows;
    const auto add = [&](const char* name, int kv_heads) {
        const double bytes = bytes_per_token_with(config, kv_heads, dtype);
        rows.push_back({name, kv_heads, bytes, own > 0 ? bytes / own : 0.0, kv_heads == config.n_head_kv});
    };
    add("MHA", config.n_head);
    if (config.n_head_kv > 1 && config.n_head_kv < config.n_head) add("GQA", config.n_head_kv);
    if (config.n_head > 1) add("MQA", 1);
    return rows;
}

KvWindowSplit kv_window_split(const ModelConfig& config, KvDtype dtype, int64_t tokens) {
    KvWindowSplit split;
    split.local_layers = config.local_layer_count();
    split.global_layers = config.n_layer - split.local_layers;
    split.window = split.local_layers > 0 ? config.sliding_window : 0;
    split.layer_bytes_per_token = formula_kv_bytes_per_token(config, dtype) / config.n_layer;
    split.tokens = tokens;
    const auto local_tokens = static_cast<double>(std::min<int64_t>(tokens, split.window));
    split.global_bytes = split.global_layers * split.layer_bytes_per_token * static_cast<double>(tokens);
    split.local_bytes = split.local_layers * split.layer_bytes_per_token * local_tokens;
    split.all_global_bytes = config.n_layer * split.layer_bytes_per_token * static_cast<double>(tokens);
    return split;
}

}  // namespace inferscope
