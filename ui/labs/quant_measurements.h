#pragma once
// The engine work behind the quantization lab, as functions of a LabContext run on the
// engine worker thread: the per-matrix error analysis of one scheme, the quantized model
// itself, and its quality against the unquantized model. Once the context is cancelled, the
// engine call returns at its next progress report and LabJobCancelled is thrown.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/eval/battery.h"
#include "engine/quant/model_quantizer.h"
#include "ui/lab_job.h"

namespace inferscope::ui {

// analyze_quantization of the loaded model's projection matrices under `scheme`.
QuantReport measure_quant_errors(const LabContext& context, const QuantScheme& scheme);

// quantize_model of the loaded model under `scheme` (the model generation can run).
QuantizedModel measure_quantized_model(const LabContext& context, const QuantScheme& scheme);

// What "Measure quality" scores: a text for perplexity, KL and top-1 (llama-perplexity's
// chunks of n_ctx tokens, at most max_chunks of them), and optionally a battery.
struct QualitySettings {
    std::string text_name;  // said in the UI and the table
    std::string text;
    int n_ctx = 128;
    int max_chunks = 8;
    std::optional<Battery> battery;
};

// The text's tokens as perplexity reads them (BOS, no special-token parsing), cut to
// max_chunks x n_ctx; InvalidArgument (from the engine) when too short for two chunks.
std::vector<TokenId> quality_tokens(const Model& model, const QualitySettings& settings);

struct QualityRow {
    std::string scheme;
    double bits_per_weight = 0;  // storage bits / parameters of the quantized matrices
    uint64_t model_bytes = 0;    // quantized matrices + every other tensor as stored
    double reference_ppl = 0;
    double ppl = 0;
    double ppl_stderr = 0;
    double kl_mean = 0;          // nats per scored token, KL(unquantized || quantized)
    double top1_agreement = 0;   // share of scored tokens whose argmax matches
    int64_t scored_tokens = 0;
    std::optional<BatteryResult> battery;            // greedy, no repeat penalty
    std::optional<BatteryResult> reference_battery;  // the same on the unquantized model
    double delta_ppl() const { return ppl - reference_ppl; }
};

// Quantizes the loaded model under `scheme` and runs compare_distributions (and
// run_battery on both models when settings.battery is set) against the unquantized model.
QualityRow measure_quant_quality(const LabContext& context, const QuantScheme& scheme, const QualitySettings& settings);

}  // namespace inferscope::ui
