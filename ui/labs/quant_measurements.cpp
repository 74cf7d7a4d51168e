#include "ui/labs/quant_measurements.h"

#include <QCoreApplication>
#include <algorithm>

#include "engine/eval/perplexity.h"
#include "engine/eval/quality.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope::ui {
namespace {

// The share of the quality job's progress bar taken by quantizing; scoring takes the rest.
constexpr double kQuantizeProgressShare = 0.3;

// Quantization over [begin, end] of the job's progress bar.
QuantRunOptions run_options(const LabContext& context, double begin, double end) {
    QuantRunOptions options;
    options.n_threads = context.threads();
    options.progress = context
                           .engine_progress([](const ProgressUpdate& update) {
                               return QCoreApplication::translate("QuantizationLab", "quantized %1 (%2 of %3)")
                                   .arg(QString::fromUtf8(update.item))
                                   .arg(update.done)
                                   .arg(update.total);
                           })
                           .share(begin, end);
    return options;
}

SessionOptions quality_session_options(const LabContext& context, const QualitySettings& settings) {
    SessionOptions options;
    options.n_threads = context.threads();
    options.n_ctx = settings.n_ctx;
    return options;
}

}  // namespace

QuantReport measure_quant_errors(const LabContext& context, const QuantScheme& scheme) {
    const Model& model = context.require_model();
    context.throw_if_cancelled();
    const QuantScheme schemes[] = {scheme};
    QuantReport report = analyze_quantization(model, schemes, run_options(context, 0.0, 1.0));
    context.throw_if_cancelled();
    return report;
}

QuantizedModel measure_quantized_model(const LabContext& context, const QuantScheme& scheme) {
    context.require_model();
    context.throw_if_cancelled();
    QuantizedModel quantized = quantize_model(context.model(), scheme, run_options(context, 0.0, 1.0));
    context.throw_if_cancelled();
    return quantized;
}

std::vector<TokenId> quality_tokens(const Model& model, const QualitySettings& settings) {
    // As llama-perplexity: tokenized once, BOS prepended, special tokens not parsed.
    std::vector<TokenId> tokens = model.tokenizer().encode(settings.text, true, false);
    const size_t limit = static_cast<size_t>(std::max(0, settings.max_chunks)) * static_cast<size_t>(std::max(0, settings.n_ctx));
    if (tokens.size() > limit) tokens.resize(limit);
    check_perplexity_input(static_cast<int64_t>(tokens.size()), settings.n_ctx, model.config().context_length);
    return tokens;
}

QualityRow measure_quant_quality(const LabContext& context, const QuantScheme& scheme, const QualitySettings& settings) {
    const Model& model = context.require_model();
    const std::vector<TokenId> tokens = quality_tokens(model, settings);
    context.throw_if_cancelled();
    const QuantizedModel quantized = quantize_model(context.model(), scheme, run_options(context, 0.0, kQuantizeProgressShare));
    context.throw_if_cancelled();
    const SchemeSummary& summary = quantized.report.schemes.front();
    InferenceSession reference(context.model(), quality_session_options(context, settings));
    InferenceSession candidate(quantized.model, quality_session_options(context, settings));
    const double compare_end = settings.battery ? 0.8 : 1.0;
    DistributionOptions d;
    d.n_ctx = settings.n_ctx;
    d.n_batch = settings.n_ctx;
    d.progress = context
                     .engine_progress([](const ProgressUpdate& update) {
                         return QCoreApplication::translate("QuantizationLab", "scored chunk %1 of %2").arg(update.done).arg(update.total);
                     })
                     .share(kQuantizeProgressShare, compare_end);
    const DistributionComparison comparison = compare_distributions(reference, candidate, tokens, d);
    context.throw_if_cancelled();
    QualityRow row{.scheme = scheme.name(),
                   .bits_per_weight = summary.bits_per_weight,
                   .model_bytes = summary.model_bytes,
                   .reference_ppl = comparison.reference_ppl,
                   .ppl = comparison.candidate_ppl,
                   .ppl_stderr = comparison.candidate_ppl_stderr,
                   .kl_mean = comparison.kl_mean,
                   .top1_agreement = comparison.top1_agreement,
                   .scored_tokens = comparison.n_tokens,
                   .battery = std::nullopt,
                   .reference_battery = std::nullopt};
    if (settings.battery) {
        context.progress(compare_end, QCoreApplication::translate("QuantizationLab", "running the battery"));
        row.battery = run_battery(candidate, *settings.battery, 1.0f);
        context.throw_if_cancelled();
        row.reference_battery = run_battery(reference, *settings.battery, 1.0f);
        context.throw_if_cancelled();
    }
    return row;
}

}  // namespace inferscope::ui
