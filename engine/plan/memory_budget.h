#pragma once
// The memory budget of serving a model: weights + runtime reserve + KV cache <= device
// memory. The question it answers is not "does the model fit?" but "with how many resident
// tokens of context, and so how many tokens per user?".
#include <cstdint>
#include <string>
#include <vector>

namespace inferscope {

struct ModelConfig;

// What the budget needs to know about a model.
struct BudgetModel {
    std::string name;
    double parameters = 0;  // every weight, embeddings included
    int layers = 0;
    int kv_heads = 0;
    int head_dim = 0;
    // Sliding-window layers (counted in `layers`) keep only the last `window` tokens.
    int local_layers = 0;
    int window = 0;
};

// The preset model shapes, from a small model's to a large one's with full multi-head attention.
const std::vector<BudgetModel>& budget_model_presets();
// A preset by name (InvalidArgument listing the presets when unknown).
const BudgetModel& budget_model_preset(const std::string& name);
// The loaded model as a preset: its parameter count and attention shape.
BudgetModel budget_model_from_config(const std::string& name, double parameters, const ModelConfig& config);

// Bits per weight of a weight format name: fp16 16, int8 8, int4 4.125 (g128 with fp16
// scales). InvalidArgument for other names.
double weight_bits_per_parameter(const std::string& format);
// Bytes per cached K or V element: f16 2, q8_0 34/32 (a fp16 scale per 32 values).
double kv_bytes_per_element(const std::string& kv_dtype);

// KV cache bytes per token: 2 (K and V) x layers x kv_heads x head_dim x bytes per element.
double kv_bytes_per_token(const BudgetModel& model, double bytes_per_element);

struct BudgetRow {
    std::string model, weights;
    double memory_gib = 0;
    double weight_bytes = 0;
    double reserve_bytes = 0;
    double kv_bytes_per_token = 0;
    double kv_budget_bytes = 0;     // memory - weights - reserve (negative: does not fit)
    int64_t max_resident_tokens = 0;  // 0 when the weights and reserve alone do not fit
    int64_t tokens_per_user = 0;
};

struct BudgetQuery {
    double memory_gib = 0;
    double reserve_gib = 1.5;
    std::string weights = "fp16";
    std::string kv_dtype = "f16";
    int users = 1;
};

// One row: weights = parameters x bits / 8; KV bytes/token = 2 x layers x kv_heads x
// head_dim x bytes per element; resident tokens = floor((memory - weights - reserve) / that).
// Memory and reserve are in GiB (2^30 bytes).
BudgetRow plan_memory_budget(const BudgetModel& model, const BudgetQuery& query);

}  // namespace inferscope
