// `eval`: does quantized quality hold? One table, one row per scheme plus the reference:
// perplexity (llama-perplexity's method), KL divergence and top-1 agreement against the
// reference (streamed side by side), greedy agreement under teacher forcing, and a prompt
// battery with and without a repetition penalty. The reference is loaded once; each scheme
// is applied in memory, evaluated and released before the next. With --act, every weight
// variant (the unquantized model, then each scheme) is also run with INT8 activations in
// its linear layers (engine/backend/activation_precision.h), one row per precision.
#include <cstdio>
#include <optional>
#include <span>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "app/cli/quant_cli_common.h"
#include "engine/backend/activation_precision.h"
#include "engine/core/error.h"
#include "engine/eval/battery.h"
#include "engine/eval/perplexity.h"
#include "engine/eval/quality.h"

namespace inferscope::cli {
namespace {

struct EvalCliOptions {
    ModelOptions model;
    std::vector<std::string> schemes;
    std::vector<std::string> activations;  // --act, in the order given
    std::string text_path;
    int n_batch = 512;
    int agreement_positions = 0;
    std::string battery_path;
    float repeat_penalty = 1.1f;
    bool include_embeddings = false;
};

// Everything measured for one row of the table.
struct EvalRow {
    std::string label;
    std::string execution;
    ActivationPrecision activations;
    double bits_per_weight = 0;
    double weighted_relative_error = 0;
    double ppl = 0;
    double ppl_stderr = 0;
    std::optional<DistributionComparison> distribution;  // absent for the reference
    std::optional<AgreementResult> agreement;
    std::optional<BatteryResult> battery_plain;
    std::optional<BatteryResult> battery_penalized;
};

// What every row is measured on, prepared once.
struct EvalInputs {
    std::vector<TokenId> text_tokens;
    std::vector<std::vector<TokenId>> agreement_prompts;
    std::optional<Battery> battery;
};

// Agreement prompts: the battery's prompts when there is a battery, else eight 32-token
// windows spread over the text (each starting with BOS when the vocabulary adds one).
std::vector<std::vector<TokenId>> agreement_prompts(const Model& model, const EvalInputs& in) {
    std::vector<std::vector<TokenId>> prompts;
    if (in.battery) {
        for (const BatteryItem& item : in.battery->items) prompts.push_back(tokenize_prompt(model, item.prompt));
        return prompts;
    }
    constexpr size_t kWindows = 8, kWindowTokens = 32;
    const size_t stride = in.text_tokens.size() / kWindows;
    const Tokenizer& tokenizer = model.tokenizer();
    for (size_t w = 0; w < kWindows && stride >= kWindowTokens; ++w) {
        const auto begin = in.text_tokens.begin() + static_cast<std::ptrdiff_t>(w * stride);
        std::vector<TokenId> prompt(begin, begin + static_cast<std::ptrdiff_t>(kWindowTokens));
        if (tokenizer.add_bos() && tokenizer.bos_id() >= 0) prompt[0] = tokenizer.bos_id();
        prompts.push_back(std::move(prompt));
    }
    return prompts;
}

double reference_bits_per_weight(const Model& model, bool include_embeddings) {
    double bits = 0, parameters = 0;
    for (const WeightMatrix* m : quantizable_matrices(model, include_embeddings)) {
        bits += static_cast<double>(m->bytes()) * 8.0;
        parameters += static_cast<double>(m->rows) * static_cast<double>(m->cols);
    }
    return bits / parameters;
}

// Sessions get the model's context (at most 4096, or -c when larger): room for the
// perplexity chunks and for prompts plus generated tokens.
SessionOptions eval_session_options(const ModelOptions& m) {
    SessionOptions s = session_options(m);
    s.n_ctx = m.ctx > 4096 ? m.ctx : 0;
    return s;
}

void run_battery_twice(const EvalCliOptions& o, const EvalInputs& in, InferenceSession& session, EvalRow& row) {
    if (!in.battery) return;
    row.battery_plain = run_battery(session, *in.battery, 1.0f);
    row.battery_penalized = run_battery(session, *in.battery, o.repeat_penalty);
}

EvalRow evaluate_reference(const EvalCliOptions& o, const EvalInputs& in, InferenceSession& session) {
    EvalRow row;
    row.label = "reference";
    row.execution = "as stored";
    row.bits_per_weight = reference_bits_per_weight(session.model(), o.include_embeddings);
    PerplexityOptions p;
    p.n_ctx = o.model.ctx;
    p.n_batch = o.n_batch;
    const PerplexityResult r = compute_perplexity(session, in.text_tokens, p);
    row.ppl = r.ppl;
    row.ppl_stderr = r.ppl_stderr;
    run_battery_twice(o, in, session, row);
    return row;
}

// The candidate model (the reference's weights or a scheme's) with the row's activation
// precision, measured against the reference.
EvalRow compare_candidate(const EvalCliOptions& o, const EvalInputs& in, InferenceSession& reference,
                          const std::shared_ptr<const Model>& candidate, EvalRow row) {
    SessionOptions options = eval_session_options(o.model);
    options.activation_precision = row.activations;
    InferenceSession session(candidate, options, make_backend(o.model, candidate));
    const std::string label = row.label + " (activations " + activation_precision_name(row.activations) + ")";
    DistributionOptions d;
    d.n_ctx = o.model.ctx;
    d.n_batch = o.n_batch;
    d.progress = stderr_progress("eval " + label);
    row.distribution = compare_distributions(reference, session, in.text_tokens, d);
    row.ppl = row.distribution->candidate_ppl;
    row.ppl_stderr = row.distribution->candidate_ppl_stderr;
    if (o.agreement_positions > 0) {
        row.agreement = greedy_agreement(reference, session, in.agreement_prompts, o.agreement_positions);
    }
    run_battery_twice(o, in, session, row);
    return row;
}

// The unquantized weights with each activation precision of --act.
void evaluate_activations(const EvalCliOptions& o, const EvalInputs& in, InferenceSession& reference,
                          std::span<const ActivationPrecision> activations, std::vector<EvalRow>& rows) {
    EvalRow row;  // a copy: rows grows below
    row.label = rows.front().label;
    row.execution = rows.front().execution;
    row.bits_per_weight = rows.front().bits_per_weight;
    for (const ActivationPrecision& precision : activations) {
        row.activations = precision;
        rows.push_back(compare_candidate(o, in, reference, reference.model_ptr(), row));
    }
}

// One scheme, quantized once: F32 activations, then each precision of --act.
void evaluate_scheme(const EvalCliOptions& o, const EvalInputs& in, InferenceSession& reference, const QuantScheme& scheme,
                     std::span<const ActivationPrecision> activations, std::vector<EvalRow>& rows) {
    QuantRunOptions q;
    q.include_embeddings = o.include_embeddings;
    q.n_threads = o.model.threads;
    q.progress = stderr_progress("eval " + scheme.name());
    const QuantizedModel quantized = quantize_model(reference.model_ptr(), scheme, q);
    EvalRow row;
    row.label = scheme.name();
    row.execution = execution_label(scheme);
    row.bits_per_weight = quantized.report.schemes[0].bits_per_weight;
    row.weighted_relative_error = quantized.report.schemes[0].weighted_relative_error;
    rows.push_back(compare_candidate(o, in, reference, quantized.model, row));
    for (const ActivationPrecision& precision : activations) {
        row.activations = precision;
        rows.push_back(compare_candidate(o, in, reference, quantized.model, row));
    }
}

nlohmann::json row_json(const EvalRow& r) {
    nlohmann::json j = {{"scheme", r.label},           {"execution", r.execution},
                        {"bits_per_weight", r.bits_per_weight}, {"weighted_relative_error", r.weighted_relative_error},
                        {"ppl", r.ppl},                {"ppl_stderr", r.ppl_stderr}};
    j["activations"] = activation_precision_name(r.activations);
    if (r.activations.mode == ActivationMode::LlmInt8) j["activation_outlier_threshold"] = r.activations.outlier_threshold;
    if (r.distribution) {
        j["kl_mean"] = r.distribution->kl_mean;
        j["kl_p99"] = r.distribution->kl_p99;
        j["kl_max"] = r.distribution->kl_max;
        j["top1_matches"] = r.distribution->top1_matches;
        j["top1_agreement"] = r.distribution->top1_agreement;
        j["scored_tokens"] = r.distribution->n_tokens;
    }
    if (r.agreement) {
        j["agreement"] = {{"matches", r.agreement->matches},
                          {"positions", r.agreement->positions},
                          {"per_prompt", r.agreement->matches_per_prompt}};
    }
    for (const auto* b : {&r.battery_plain, &r.battery_penalized}) {
        if (!b->has_value()) continue;
        nlohmann::json items = nlohmann::json::array();
        for (const BatteryItemResult& item : (*b)->items) items.push_back({{"generated", item.generated}, {"passed", item.passed}});
        j[b == &r.battery_plain ? "battery_greedy" : "battery_repeat_penalty"] = {
            {"passed", (*b)->passed}, {"total", (*b)->total}, {"repeat_penalty", (*b)->repeat_penalty}, {"items", items}};
    }
    return j;
}

std::string fraction(int64_t part, int64_t whole) { return std::to_string(part) + "/" + std::to_string(whole); }

void print_table(const EvalCliOptions& o, const std::vector<EvalRow>& rows) {
    char penalty_header[32];
    std::snprintf(penalty_header, sizeof penalty_header, "battery rp%.2f", static_cast<double>(o.repeat_penalty));
    std::printf("%-14s %7s  %-20s %-12s %8s %20s %8s %9s %9s %7s %11s %10s %13s\n", "scheme", "bits/w", "executes as",
                "activations", "wtd rel", "PPL", "dPPL", "KL mean", "KL p99", "top-1", "agreement", "battery", penalty_header);
    const double reference_ppl = rows.front().ppl;
    for (const EvalRow& r : rows) {
        char ppl[48];
        std::snprintf(ppl, sizeof ppl, "%.4f +/- %.4f", r.ppl, r.ppl_stderr);
        char delta[24] = "-", kl_mean[16] = "-", kl_p99[16] = "-", top1[16] = "-";
        if (r.distribution) {
            std::snprintf(delta, sizeof delta, "%+.2f%%", 100.0 * (r.ppl / reference_ppl - 1.0));
            std::snprintf(kl_mean, sizeof kl_mean, "%.5f", r.distribution->kl_mean);
            std::snprintf(kl_p99, sizeof kl_p99, "%.5f", r.distribution->kl_p99);
            std::snprintf(top1, sizeof top1, "%.4f", r.distribution->top1_agreement);
        }
        const std::string agreement = r.agreement ? fraction(r.agreement->matches, r.agreement->positions) : "-";
        const std::string plain = r.battery_plain ? fraction(r.battery_plain->passed, r.battery_plain->total) : "-";
        const std::string penal = r.battery_penalized ? fraction(r.battery_penalized->passed, r.battery_penalized->total) : "-";
        std::printf("%-14s %7.4f  %-20s %-12s %8.4f %20s %8s %9s %9s %7s %11s %10s %13s\n", r.label.c_str(),
                    r.bits_per_weight, r.execution.c_str(), activation_precision_name(r.activations).c_str(),
                    r.weighted_relative_error, ppl, delta, kl_mean, kl_p99, top1,
                    agreement.c_str(), plain.c_str(), penal.c_str());
    }
    std::printf("(KL: KL(reference || scheme) per scored token, nats; top-1: share of scored tokens whose argmax "
                "matches the reference; agreement: teacher-forced matches of the reference's greedy tokens; "
                "activations: what the linear layers' inputs are, f32 or INT8 emulated)\n");
}

EvalInputs prepare_inputs(const EvalCliOptions& o, const Model& model) {
    EvalInputs in;
    // As llama-perplexity: tokenize once with BOS and without parsing special tokens.
    in.text_tokens = model.tokenizer().encode(read_text_file(o.text_path), true, false);
    if (!o.battery_path.empty()) in.battery = load_battery(o.battery_path);
    if (o.agreement_positions > 0) in.agreement_prompts = agreement_prompts(model, in);
    return in;
}

void run_eval(EvalCliOptions o) {
    const std::vector<QuantScheme> schemes = parse_schemes(o.schemes);
    std::vector<ActivationPrecision> activations;
    for (const std::string& text : o.activations) activations.push_back(parse_activation_precision(text));
    if (o.model.ctx == 0) o.model.ctx = 512;
    const auto model = load_model(o.model);
    const EvalInputs in = prepare_inputs(o, *model);
    InferenceSession reference(model, eval_session_options(o.model), make_backend(o.model, model));
    std::fprintf(stderr, "eval: %zu tokens, %zu chunks of %d; reference first\n", in.text_tokens.size(),
                 in.text_tokens.size() / static_cast<size_t>(o.model.ctx), o.model.ctx);
    std::vector<EvalRow> rows;
    rows.push_back(evaluate_reference(o, in, reference));
    if (o.agreement_positions > 0) {
        AgreementResult self;  // the reference agrees with itself by definition
        self.positions = static_cast<int64_t>(in.agreement_prompts.size()) * o.agreement_positions;
        self.matches = self.positions;
        rows.back().agreement = self;
    }
    evaluate_activations(o, in, reference, activations, rows);
    for (const QuantScheme& scheme : schemes) evaluate_scheme(o, in, reference, scheme, activations, rows);
    if (o.model.json) {
        nlohmann::json out = nlohmann::json::array();
        for (const EvalRow& r : rows) out.push_back(row_json(r));
        print_json({{"model", model->config().name}, {"text", o.text_path}, {"n_ctx", o.model.ctx}, {"rows", out}});
        return;
    }
    print_table(o, rows);
}

}  // namespace

void add_eval_command(CLI::App& app) {
    auto o = std::make_shared<EvalCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "eval", "quality of quantization schemes against the unquantized model: perplexity, KL, agreement, battery");
    add_model_options(*cmd, o->model, /*with_runtime=*/true);
    cmd->add_option("-s,--scheme", o->schemes, kSchemeHelp);
    cmd->add_option("--act", o->activations,
                    "activations of the linear layers for extra rows (unquantized weights and each scheme): "
                    "int8:tensor, int8:token, llm.int8[:<threshold>] (default threshold 6.0), f32; repeatable");
    cmd->add_option("-f,--file", o->text_path, "text file for perplexity and KL")->required();
    cmd->add_option("-b,--batch-size", o->n_batch, "tokens per forward step")->check(positive())->capture_default_str();
    cmd->add_option("--agreement", o->agreement_positions,
                    "greedy positions per prompt for teacher-forced agreement (prompts: the battery's, else 8 "
                    "windows of the text); 0: off")
        ->check(non_negative());
    cmd->add_option("--battery", o->battery_path, "prompt battery (format: resources/quality/battery-default.txt)");
    cmd->add_option("--repeat-penalty", o->repeat_penalty, "penalty for the battery's second run")
        ->check(positive())
        ->capture_default_str();
    cmd->add_flag("--embeddings", o->include_embeddings, "also quantize token_embd and output");
    cmd->callback([o] { run_eval(*o); });
}

}  // namespace inferscope::cli
