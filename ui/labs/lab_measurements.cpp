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
    size_t done = 0;
    bench.on_progress = [&](const std::string& what) {
        ++done;
        context.progress(static_cast<double>(done) / static_cast<double>(settings.batch_sizes.size()),
                         QCoreApplication::translate("BatchingLab", "measured %1").arg(QString::fromStdString(what)));
        context.throw_if_cancelled();
    };
    context.throw_if_cancelled();
    return run_batch_bench(session, bench);
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

namespace {


// Passes progress on only when it reaches another percent or stage: a tiny model makes
// thousands of steps per second, and each report is an event for the UI thread.
class PercentProgress {
public:
    explicit PercentProgress(const LabContext& context) : context_(context) {}
    void operator()(double fraction, const QString& stage) {
        const int percent = static_cast<int>(fraction * 100);
        if (percent == last_percent_ && stage == last_stage_) return;
        last_percent_ = percent;
        last_stage_ = stage;
        context_.progress(fraction, stage);
    }

private:
    const LabContext& context_;
    int last_percent_ = -1;
    QString last_stage_;
};

}  // namespace

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
    const double total_tokens = 2.0 * static_cast<double>(std::max<int64_t>(trace_tokens, 1));  // two policies
    int64_t made = 0;
    PercentProgress progress(context);
    const auto run = [&](BatchingPolicy policy) {
        SchedulerOptions scheduler;
        scheduler.policy = policy;
        scheduler.slots = slot_count;
        SamplingParams greedy;
        greedy.temperature = 0;
        const auto executor = make_engine_executor(session, requests, greedy);
        const QString stage = QCoreApplication::translate("BatchingLab", "serving the trace for real, %1 batching")
                                  .arg(QString::fromStdString(std::string(batching_policy_name(policy))));
        // Each slot serving a request makes one token per step (padding slots make none).
        return serve(requests, scheduler, *executor, [&](const SchedulerStep& step, ServingControl& control) {
            made += step.active_slots;
            progress(std::min(1.0, static_cast<double>(made) / total_tokens), stage);
            if (context.cancelled()) control.cancel_all();
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
    std::sort(latencies_s.begin(), latencies_s.end());
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < latencies_s.size(); ++i) {
        points.emplace_back(latencies_s[i], 100.0 * static_cast<double>(i + 1) / static_cast<double>(latencies_s.size()));
    }
    return points;
}

namespace {

// Shares of the speculative tab's progress bar: quantizing the draft, then the runs; and of
// each run: plain decoding, then the speculative run.
constexpr double kQuantizeShare = 0.2;
constexpr double kPlainShare = 0.5;

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
    options.on_progress = [&](int done, int total, const std::string&) {
        context.progress(kQuantizeShare * done / std::max(total, 1), stage);
        return !context.cancelled();
    };
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
    PercentProgress progress(context);
    const int runs = std::max(1, settings.repetitions);
    int run = 0;
    const auto on_progress = [&](std::string_view stage, int done, int total) {
        const bool plain = stage == "plain decoding";
        const double start = plain ? 0.0 : kPlainShare;
        const double share = plain ? kPlainShare : 1.0 - kPlainShare;
        const double within_run = (start + share * done / std::max(total, 1) + run) / runs;
        progress(kQuantizeShare + (1.0 - kQuantizeShare) * within_run,
                 QString::fromUtf8(stage.data(), static_cast<qsizetype>(stage.size())));
        return !context.cancelled();
    };
    SpeculativeRunResult result;
    result.draft_label = settings.draft_path.empty() ? parse_quant_scheme(settings.draft_scheme).name() : settings.draft_path;
    result.gamma = settings.gamma;
    std::vector<double> speedups;
    for (run = 0; run < runs; ++run) {
        result.measured = measure_speculative(target_session, draft_session, prompt, speculative, on_progress);
        context.throw_if_cancelled();
        speedups.push_back(result.measured.speedup);
    }
    result.speedup = sample_stats(speedups);
    result.text = target.tokenizer().decode(result.measured.speculative.generated);
    return result;
}

PhasesReport measure_phases_stepwise(const LabContext& context, const PhasesOptions& options) {
    const Model& model = context.require_model();
    if (options.prompt_lengths.size() != options.context_lengths.size()) {
        throw InvalidArgument("the prefill-vs-decode panel measures as many prompt lengths as cache lengths");
    }
    check_phases_options(options, model.config().context_length);
    SessionOptions session_options;
    session_options.n_threads = context.threads();
    session_options.n_ctx = phases_context_needed(options);
    InferenceSession session(context.model(), session_options);
    PhasesReport report;
    const size_t steps = options.prompt_lengths.size();
    for (size_t i = 0; i < steps; ++i) {
        context.throw_if_cancelled();
        PhasesOptions one = options;
        one.prompt_lengths = {options.prompt_lengths[i]};
        one.context_lengths = {options.context_lengths[i]};
        const PhasesReport part = measure_phases(session, one);
        report.prefill.insert(report.prefill.end(), part.prefill.begin(), part.prefill.end());
        report.decode.insert(report.decode.end(), part.decode.begin(), part.decode.end());
        context.progress(static_cast<double>(i + 1) / static_cast<double>(steps),
                         QCoreApplication::translate("PhasesLab", "measured %1 prompt tokens, %2 cached tokens")
                             .arg(options.prompt_lengths[i])
                             .arg(options.context_lengths[i]));
    }
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
    options.on_progress = [&](int done, int total, const std::string& matrix) {
        context.progress(static_cast<double>(done) / std::max(1, total),
                         QCoreApplication::translate("SoftLabelsLab", "quantizing the student under %1: %2")
                             .arg(QString::fromStdString(name), QString::fromStdString(matrix)));
        return !context.cancelled();
    };
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
