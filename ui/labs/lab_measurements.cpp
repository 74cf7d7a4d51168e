#include "ui/labs/lab_measurements.h"

#include <QCoreApplication>
#include <algorithm>
#include <string>

#include "engine/chat/conversation.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/quant/model_quantizer.h"
#include "engine/runtime/session.h"

namespace inferscope::ui {

BatchBenchReport measure_batch_sizes(const LabContext& context, const BatchRunSettings& settings) {
    context.require_model();
    if (settings.batch_sizes.empty()) throw InvalidArgument("no batch sizes given");
    SessionOptions options;
    options.n_threads = context.threads();
    options.n_ctx = settings.prompt_tokens + settings.generate_tokens;
    options.max_sequences = std::max(1, *std::max_element(settings.batch_sizes.begin(), settings.batch_sizes.end()));
    InferenceSession session(context.model(), options);
    BatchBenchOptions bench;
    bench.batch_sizes = settings.batch_sizes;
    bench.prompt_tokens = settings.prompt_tokens;
    bench.generate_tokens = settings.generate_tokens;
    bench.repetitions = settings.repetitions;
    bench.progress = context.engine_progress([](const ProgressUpdate& update) {
        return QCoreApplication::translate("BatchingLab", "measured %1").arg(QString::fromUtf8(update.item));
    });
    context.throw_if_cancelled();
    BatchBenchReport report = run_batch_bench(session, bench);
    context.throw_if_cancelled();
    return report;
}

StepCostModel cost_model_from_batch_rows(const std::vector<BatchBenchRow>& rows) {
    if (rows.empty()) throw InvalidArgument("a cost model from the batch sweep needs at least one measured batch size");
    int largest_batch = 0;
    for (const BatchBenchRow& r : rows) largest_batch = std::max(largest_batch, r.batch);
    const BatchBenchRow& first = rows.front();
    const int context = first.prompt_tokens + first.generate_tokens / 2;
    std::vector<StepCostModel::Point> points;
    for (const BatchBenchRow& r : rows) {
        points.push_back({r.batch, context, r.ms_per_step / 1000.0});
        const int prefill_tokens = r.batch * r.prompt_tokens;
        if (prefill_tokens > largest_batch) points.push_back({prefill_tokens, context, r.prefill_s});
    }
    // Two rows may price the same prompt size (B x PP); the first one measured is kept.
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.tokens < b.tokens; });
    points.erase(std::unique(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.tokens == b.tokens; }),
                 points.end());
    return StepCostModel(std::move(points));
}

ReplayResult replay_trace(const StepCostModel& costs, const TraceOptions& trace, int slot_count) {
    if (slot_count < 1) throw InvalidArgument("the replay needs at least one slot (got " + std::to_string(slot_count) + ")");
    const std::vector<ServingRequest> requests = generate_trace(trace);
    const auto run = [&](BatchingPolicy policy) {
        SchedulerOptions options;
        options.policy = policy;
        options.slots = slot_count;
        const auto executor = make_simulated_executor(costs);
        return serve(requests, options, *executor);
    };
    return {run(BatchingPolicy::Static), run(BatchingPolicy::Continuous)};
}

ReplayResult replay_trace_for_real(const LabContext& context, TraceOptions trace, int slot_count) {
    const Model& model = context.require_model();
    if (slot_count < 1) throw InvalidArgument("the replay needs at least one slot (got " + std::to_string(slot_count) + ")");
    trace.vocab_size = model.config().n_vocab;
    const std::vector<ServingRequest> requests = generate_trace(trace);
    SessionOptions options;
    options.n_threads = context.threads();
    options.n_ctx = trace.prompt_tokens + trace.max_output_tokens + 1;
    options.max_sequences = slot_count;
    InferenceSession session(context.model(), options);
    int64_t trace_tokens = 0;
    for (const ServingRequest& r : requests) trace_tokens += r.max_new_tokens;
    const int64_t total_tokens = 2 * std::max<int64_t>(trace_tokens, 1);  // two policies
    int64_t made = 0;
    const Progress progress = context.engine_progress([](const ProgressUpdate& update) {
        return QCoreApplication::translate("BatchingLab", "serving the trace for real, %1 batching").arg(QString::fromUtf8(update.stage));
    });
    const auto run = [&](BatchingPolicy policy) {
        SchedulerOptions scheduler;
        scheduler.policy = policy;
        scheduler.slots = slot_count;
        SamplingParams greedy;
        greedy.temperature = 0;
        const auto executor = make_engine_executor(session, greedy);
        // Each slot serving a request makes one token per step (padding slots make none).
        return serve(requests, scheduler, *executor, [&](const SchedulerStep& step, ServingControl& control) {
            made += step.active_slots;
            progress.report(batching_policy_name(policy), made, total_tokens);
            if (progress.cancelled()) control.cancel_all();
        });
    };
    ReplayResult result{run(BatchingPolicy::Static), {}};
    context.throw_if_cancelled();
    result.continuous_run = run(BatchingPolicy::Continuous);
    context.throw_if_cancelled();
    return result;
}

std::vector<std::pair<double, double>> latency_distribution(const ServingReport& report) {
    std::vector<double> latencies_s;
    for (const RequestMetrics& r : report.requests) {
        if (r.finished_s >= 0) latencies_s.push_back(r.end_to_end_s());
    }
    return cumulative_shares(std::move(latencies_s));
}

std::vector<std::pair<double, double>> cumulative_shares(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < values.size(); ++i) {
        points.emplace_back(values[i], 100.0 * static_cast<double>(i + 1) / static_cast<double>(values.size()));
    }
    return points;
}

namespace {

// The share of the speculative tab's progress bar taken by quantizing the draft.
constexpr double kQuantizeShare = 0.2;

std::shared_ptr<const Model> load_draft(const LabContext& context, const SpeculativeRunSettings& settings) {
    if (settings.draft_path.empty() == settings.draft_scheme.empty()) {
        throw InvalidArgument("choose one draft: a quantization scheme of the loaded model or a second GGUF file");
    }
    if (!settings.draft_path.empty()) return Model::load(settings.draft_path);
    const QuantScheme scheme = parse_quant_scheme(settings.draft_scheme);
    const QString stage = QCoreApplication::translate("SpeculativeLab", "quantizing the draft under %1")
                              .arg(QString::fromStdString(scheme.name()));
    QuantRunOptions options;
    options.n_threads = context.threads();
    options.progress = context.engine_progress([&stage](const ProgressUpdate&) { return stage; }).share(0, kQuantizeShare);
    QuantizedModel quantized = quantize_model(context.model(), scheme, options);
    context.throw_if_cancelled();
    return quantized.model;
}

}  // namespace

SpeculativeRunResult measure_speculative_decoding(const LabContext& context, const SpeculativeRunSettings& settings) {
    const Model& target = context.require_model();
    const std::shared_ptr<const Model> draft = load_draft(context, settings);
    check_same_vocabulary(target, *draft);
    // A lab's prompt may be a conversation the chat template rendered, BOS text included;
    // tokenize_rendered adds the vocabulary's BOS only where the text lacks it.
    const std::vector<TokenId> prompt = chat::tokenize_rendered(target.tokenizer(), settings.prompt);
    SessionOptions options;
    options.n_threads = context.threads();
    const int context_limit = std::min(target.config().context_length, draft->config().context_length);
    // A prompt longer than the context gets the engine's error naming both lengths.
    options.n_ctx = std::clamp(static_cast<int>(prompt.size()) + settings.n_predict + settings.gamma + 1, 1, context_limit);
    InferenceSession target_session(context.model(), options);
    InferenceSession draft_session(draft, options);
    SpeculativeOptions speculative;
    speculative.n_predict = settings.n_predict;
    speculative.gamma = settings.gamma;
    speculative.temperature = 0.0f;
    const Progress runs_progress = context.engine_progress([](const ProgressUpdate& update) {
        return QString::fromUtf8(update.stage);
    }).share(kQuantizeShare, 1);
    const int runs = std::max(1, settings.repetitions);
    SpeculativeRunResult result;
    result.draft_label = settings.draft_path.empty() ? parse_quant_scheme(settings.draft_scheme).name() : settings.draft_path;
    result.gamma = settings.gamma;
    std::vector<double> speedups;
    for (int run = 0; run < runs; ++run) {
        speculative.progress = runs_progress.part(run, runs);
        result.measured = measure_speculative(target_session, draft_session, prompt, speculative);
        context.throw_if_cancelled();
        speedups.push_back(result.measured.speedup);
    }
    result.speedup = sample_stats(speedups);
    result.text = target.tokenizer().decode(result.measured.speculative.generated);
    return result;
}

PhasesReport measure_prefill_and_decode(const LabContext& context, PhasesOptions options) {
    const Model& model = context.require_model();
    check_phases_options(options, model.config().context_length);
    SessionOptions session_options;
    session_options.n_threads = context.threads();
    session_options.n_ctx = phases_context_needed(options);
    InferenceSession session(context.model(), session_options);
    options.progress = context.engine_progress([](const ProgressUpdate& update) {
        return QCoreApplication::translate("PhasesLab", "measuring %1 (%2)")
            .arg(QString::fromUtf8(update.stage), QString::fromUtf8(update.item));
    });
    context.throw_if_cancelled();
    PhasesReport report = measure_phases(session, options);
    context.throw_if_cancelled();
    return report;
}

OutlierReport measure_outliers(const LabContext& context, const std::string& prompt, const OutlierAnalysisOptions& options) {
    const Model& model = context.require_model();
    const std::vector<TokenId> tokens = chat::tokenize_rendered(model.tokenizer(), prompt);
    context.throw_if_cancelled();
    SessionOptions session_options;
    session_options.n_threads = context.threads();
    // A prompt longer than the model's context gets the engine's error naming both lengths.
    session_options.n_ctx = std::clamp(static_cast<int>(tokens.size()), 1, model.config().context_length);
    InferenceSession session(context.model(), session_options);
    OutlierReport report = analyze_outliers(session, tokens, options);
    context.throw_if_cancelled();
    return report;
}

namespace {

// next_token_logits of `prompt_ids` on a session of `model` just large enough for them.
std::vector<float> logits_after(const LabContext& context, const std::shared_ptr<const Model>& model,
                                const std::vector<TokenId>& prompt_ids) {
    SessionOptions session_options;
    session_options.n_threads = context.threads();
    // A prompt longer than the model's context gets the engine's error naming both lengths.
    session_options.n_ctx = std::clamp(static_cast<int>(prompt_ids.size()), 1, model->config().context_length);
    InferenceSession session(model, session_options);
    return next_token_logits(session, prompt_ids);
}

}  // namespace

NextTokenLogits measure_next_token_logits(const LabContext& context, const std::string& prompt) {
    const Model& model = context.require_model();
    NextTokenLogits result{context.model(), chat::tokenize_rendered(model.tokenizer(), prompt), {}, {}, {}};
    context.throw_if_cancelled();
    result.logits = logits_after(context, context.model(), result.prompt_ids);
    context.throw_if_cancelled();
    return result;
}

std::shared_ptr<const Model> StudentModels::get(const LabContext& context, const QuantScheme& scheme) {
    if (teacher_.lock() != context.model()) {
        students_.clear();
        teacher_ = context.model();
    }
    const std::string name = scheme.name();
    const auto cached = std::find_if(students_.begin(), students_.end(), [&](const auto& s) { return s.first == name; });
    if (cached != students_.end()) {
        std::rotate(cached, cached + 1, students_.end());  // now the newest
        return students_.back().second;
    }
    QuantRunOptions options;
    options.n_threads = context.threads();
    options.progress = context.engine_progress([&name](const ProgressUpdate& update) {
        return QCoreApplication::translate("SoftLabelsLab", "quantizing the student under %1: %2")
            .arg(QString::fromStdString(name), QString::fromUtf8(update.item));
    });
    QuantizedModel student = quantize_model(context.model(), scheme, options);
    if (!student.model) throw LabJobCancelled();
    if (students_.size() >= kKept) students_.erase(students_.begin());
    students_.emplace_back(name, student.model);
    return student.model;
}

NextTokenLogits measure_teacher_and_student_logits(const LabContext& context, const std::string& prompt,
                                                   const std::string& student_scheme, StudentModels& students) {
    context.require_model();
    const QuantScheme scheme = parse_quant_scheme(student_scheme);
    NextTokenLogits result = measure_next_token_logits(context, prompt);
    const std::shared_ptr<const Model> student = students.get(context, scheme);
    result.student_scheme = student_scheme;
    result.student_logits = logits_after(context, student, result.prompt_ids);
    context.throw_if_cancelled();
    return result;
}

}  // namespace inferscope::ui
