#include "engine/plan/memory_budget.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/model/model_config.h"

namespace inferscope {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

const std::vector<BudgetModel>& budget_model_presets() {
    static const std::vector<BudgetModel> presets = {
        {"0.5b", 494032768.0, 24, 2, 64},  // Qwen2.5-0.5B
        {"7b", 7.0e9, 32, 8, 128},
        {"13b", 13.0e9, 40, 40, 128},  // full multi-head attention
        {"70b", 70.0e9, 80, 8, 128},
    };
    return presets;
}

const BudgetModel& budget_model_preset(const std::string& name) {
    for (const BudgetModel& m : budget_model_presets()) {
        if (m.name == name) return m;
    }
    throw InvalidArgument("unknown model preset '" + name + "' (presets: 0.5b, 7b, 13b, 70b, or loaded)");
}

BudgetModel budget_model_from_config(const std::string& name, double parameters, const ModelConfig& config) {
    const int local_layers = config.local_layer_count();
    return {name, parameters, config.n_layer, config.n_head_kv, config.head_dim, local_layers,
            local_layers > 0 ? config.sliding_window : 0};
}

double weight_bits_per_parameter(const std::string& format) {
    if (format == "fp16") return 16.0;
    if (format == "int8") return 8.0;
    if (format == "int4") return 4.125;
    throw InvalidArgument("unknown weight format '" + format + "' (fp16, int8 or int4)");
}

double kv_bytes_per_element(const std::string& kv_dtype) {
    if (kv_dtype == "f16") return 2.0;
    if (kv_dtype == "q8_0") return 34.0 / 32.0;
    throw InvalidArgument("unknown KV cache type '" + kv_dtype + "' (f16 or q8_0)");
}

double kv_bytes_per_token(const BudgetModel& model, double bytes_per_element) {
    return 2.0 * model.layers * model.kv_heads * model.head_dim * bytes_per_element;
}

BudgetRow plan_memory_budget(const BudgetModel& model, const BudgetQuery& query) {
    if (query.memory_gib <= 0) throw InvalidArgument("device memory must be positive");
    if (query.reserve_gib < 0) throw InvalidArgument("the runtime reserve cannot be negative");
    if (query.users < 1) throw InvalidArgument("users must be at least 1");
    BudgetRow row;
    row.model = model.name;
    row.weights = query.weights;
    row.memory_gib = query.memory_gib;
    row.weight_bytes = model.parameters * weight_bits_per_parameter(query.weights) / 8.0;
    row.reserve_bytes = query.reserve_gib * kGiB;
    row.kv_bytes_per_token = kv_bytes_per_token(model, kv_bytes_per_element(query.kv_dtype));
    row.kv_budget_bytes = query.memory_gib * kGiB - row.weight_bytes - row.reserve_bytes;
    if (row.kv_budget_bytes > 0 && row.kv_bytes_per_token > 0) {
        row.max_resident_tokens = static_cast<int64_t>(std::floor(row.kv_budget_bytes / row.kv_bytes_per_token));
    }
    row.tokens_per_user = row.max_resident_tokens / query.users;
    const int global_layers = model.layers - model.local_layers;
    // With local layers a user's cache grows by every layer up to the window, then by the
    // global layers alone (a model of local layers only keeps the windowless figure).
    if (model.local_layers > 0 && model.window > 0 && global_layers > 0 && row.kv_budget_bytes > 0) {
        const double layer_bytes = row.kv_bytes_per_token / model.layers;
        const double per_user = row.kv_budget_bytes / query.users;
        const double full_window = layer_bytes * model.layers * model.window;
        const double tokens = per_user <= full_window
                                  ? per_user / (layer_bytes * model.layers)
                                  : (per_user - layer_bytes * model.local_layers * model.window) / (layer_bytes * global_layers);
        row.tokens_per_user = static_cast<int64_t>(std::floor(tokens));
        row.max_resident_tokens = row.tokens_per_user * query.users;
    }
    return row;
}

}  // namespace inferscope
