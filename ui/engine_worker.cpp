#include "ui/engine_worker.h"

#include "ui/chat_messages.h"

#include <QCoreApplication>
#include <QThread>
#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "engine/chat/conversation.h"
#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/architecture.h"
#include "engine/model/model.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/session.h"
#include "engine/synth/builtin_models.h"
#include "engine/tokenizer/utf8_stream.h"
#include "gpu/vulkan_backend_factory.h"

namespace inferscope::ui {
namespace {

// The empty path opens the default built-in model.
std::optional<BuiltinModel> builtin_of(const QString& path) {
    if (path.isEmpty()) return BuiltinModel::Stories260K;
    return builtin_model_named(path.toStdString());
}

constexpr size_t kPageBytes = 4096;
constexpr size_t kProgressEveryBytes = size_t{32} << 20;

StepRecord to_record(const StepEvent& e, bool recompute) {
    StepRecord r;
    r.step = e.step;
    r.phase = QString::fromUtf8(step_phase_name(e.phase).data(), static_cast<qsizetype>(step_phase_name(e.phase).size()));
    r.recompute = recompute;
    r.n_tokens = e.n_tokens;
    r.context_length = e.context_length;
    r.wall_ms = static_cast<double>(e.wall_ns) / 1e6;
    r.kv_bytes_in_use = static_cast<qint64>(e.kv_bytes_in_use);
    r.kv_bytes_reserved = static_cast<qint64>(e.kv_bytes_reserved);
    return r;
}

}  // namespace

ModelSummary summarize_file(const GgufFile& file) {
    ModelSummary s;
    s.path = QString::fromStdString(file.path());
    s.file_bytes = static_cast<qint64>(file.file_size());
    s.fingerprint = QString::fromStdString(file.content_fingerprint());
    s.synthetic = file.get_bool("inferscope.synthetic", false);
    s.name = QString::fromStdString(file.get_string("general.name", ""));
    s.architecture = QString::fromStdString(file.get_string("general.architecture", "?"));
    std::map<std::string, int> type_counts;
    for (const auto& t : file.tensors()) {
        s.parameters += static_cast<qint64>(t.element_count);
        ++type_counts[std::string(ggml_type_name(t.type))];
    }
    for (const auto& [type, count] : type_counts) {
        s.tensor_types << QStringLiteral("%1 \u00d7 %2").arg(QString::fromStdString(type)).arg(count);
    }
    try {
        s.config = architecture_for(file).read_config(file);
    } catch (const Error&) {
        // An unsupported or inconsistent file: the preview shows what the header says and
        // loading reports the problem.
    }
    return s;
}

EngineWorker::EngineWorker(const std::atomic<quint64>& latest_request, EngineCallCounts& calls, BackendFactory gpu_backend)
    : latest_request_(latest_request), calls_(calls), gpu_backend_(std::move(gpu_backend)) {
    if (!gpu_backend_)
        gpu_backend_ = [](std::shared_ptr<const Model> model) { return gpu::make_vulkan_backend(std::move(model)); };
}

void EngineWorker::count_engine_call() {
    calls_.total.fetch_add(1);
    if (QThread::currentThread() == QCoreApplication::instance()->thread()) calls_.on_ui_thread.fetch_add(1);
}

EngineWorker::~EngineWorker() = default;

// Reads one byte of every page of the weights so that the first generation does not pay
// for page faults, reporting progress and stopping early when the request goes stale.
bool EngineWorker::page_in_weights(quint64 request, const Model& model) {
    uint64_t total_bytes = 0;
    for (const auto& t : model.file().tensors()) total_bytes += t.byte_count;
    uint64_t bytes_done = 0;
    uint64_t next_report = kProgressEveryBytes;
    volatile uint8_t sink = 0;
    for (const auto& t : model.file().tensors()) {
        for (size_t offset = 0; offset < t.data.size(); offset += kPageBytes) {
            sink = sink + t.data[offset];
            bytes_done += std::min(kPageBytes, t.data.size() - offset);
            if (bytes_done < next_report) continue;
            next_report += kProgressEveryBytes;
            if (is_stale(request)) return false;
            Q_EMIT load_progress(request, 0.3 + 0.65 * static_cast<double>(bytes_done) / static_cast<double>(total_bytes),
                               tr("Reading weights"));
        }
    }
    return true;
}

void EngineWorker::load(quint64 request, const QString& path) {
    count_engine_call();
    load_model(request, path);
    Q_EMIT request_finished(request);
}

void EngineWorker::load_model(quint64 request, const QString& path) {
    if (is_stale(request)) return;
    try {
        Q_EMIT load_progress(request, 0.0, tr("Reading the file header"));
        std::shared_ptr<const Model> model;
        if (const std::optional<BuiltinModel> builtin = builtin_of(path)) {
            model = load_builtin_model(*builtin);
            Q_EMIT preview_ready(request, summarize_file(model->file()));
        } else {
            GgufFile file = GgufFile::open(path.toStdString());
            Q_EMIT preview_ready(request, summarize_file(file));
            Q_EMIT load_progress(request, 0.1, tr("Building the tokenizer"));
            model = Model::from_gguf(std::move(file));
        }
        if (!page_in_weights(request, *model)) {
            Q_EMIT load_cancelled(request);
            return;
        }
        Q_EMIT load_progress(request, 0.95, tr("Allocating the KV cache"));
        ReadySession ready = make_ready_session(request, model);
        ModelSummary summary = describe(*model, *ready.session, path);
        if (!ready.gpu_lost.isEmpty()) summary.load_warnings << ready.gpu_lost;
        // Replace the previous model only now that the new one is complete.
        session_ = std::move(ready.session);
        model_ = std::move(model);
        weights_.reset();
        weights_description_.clear();
        summary_ = summary;
        Q_EMIT load_progress(request, 1.0, tr("Ready"));
        Q_EMIT model_loaded(request, summary);
    } catch (const std::exception& e) {
        Q_EMIT load_failed(request, path, QString::fromUtf8(e.what()));
    }
}

std::unique_ptr<InferenceSession> EngineWorker::make_session(const std::shared_ptr<const Model>& model) const {
    SessionOptions options;
    options.n_threads = threads_;
    return std::make_unique<InferenceSession>(model, options, vulkan_ ? gpu_backend_(model) : nullptr);
}

EngineWorker::ReadySession EngineWorker::make_ready_session(quint64 request, const std::shared_ptr<const Model>& model) {
    ReadySession ready;
    try {
        ready.session = make_session(model);
        ready.warmed_up = warm_up(request, *ready.session);
    } catch (const DeviceLostError& e) {
        if (!vulkan_) throw;
        vulkan_ = false;
        ready.session.reset();  // the GPU's buffers go before the CPU's are allocated
        ready.session = make_session(model);
        ready.gpu_lost = tr("%1\nThe model runs on the CPU backend.").arg(QString::fromUtf8(e.what()));
    }
    return ready;
}

bool EngineWorker::warm_up(quint64 request, InferenceSession& session) {
    if (!session.needs_warm_up()) return false;
    Q_EMIT load_progress(request, 0.97, tr("Compiling the GPU's kernels"));
    session.warm_up();
    return true;
}

ModelSummary EngineWorker::describe(const Model& model, const InferenceSession& session, const QString& path) const {
    ModelSummary summary = summarize_file(model.file());
    summary.path = path;
    if (const std::optional<BuiltinModel> builtin = builtin_of(path)) {
        summary.builtin = true;
        const std::string_view label = builtin_model_label(*builtin);
        summary.name = QString::fromUtf8(label.data(), static_cast<qsizetype>(label.size()));
    }
    const std::string_view tokenizer = model.tokenizer().kind_name();
    summary.tokenizer = QString::fromUtf8(tokenizer.data(), static_cast<qsizetype>(tokenizer.size()));
    summary.backend = QString::fromStdString(session.backend().name());
    summary.context_size = session.context_size();
    for (const std::string& warning : model.tokenizer().load_warnings()) summary.load_warnings << QString::fromStdString(warning);
    if (const auto chat_template = chat::model_chat_template(model.file())) {
        summary.chat_template = QString::fromStdString(*chat_template);
        summary.chat_family = QString::fromUtf8(chat::chat_template_family_name(chat::chat_template_family(*chat_template)));
        const Tokenizer& tok = model.tokenizer();
        const auto text_of = [&tok](TokenId id) {
            return id >= 0 && id < tok.vocab_size() ? QString::fromStdString(tok.token_text(id)) : QString();
        };
        summary.bos_text = text_of(tok.bos_id());
        summary.eos_text = text_of(tok.eos_id());
    }
    return summary;
}

void EngineWorker::set_threads(quint64 request, int threads) {
    count_engine_call();
    threads_ = threads;
    rebuild_session(request);
}

void EngineWorker::set_vulkan(quint64 request, bool vulkan) {
    count_engine_call();
    vulkan_ = vulkan;
    rebuild_session(request);
}

void EngineWorker::rebuild_session(quint64 request) {
    if (model_ && !is_stale(request)) replace_session(request);
    Q_EMIT request_finished(request);
}

void EngineWorker::replace_session(quint64 request) {
    try {
        ReadySession ready = make_ready_session(request, session_model());
        if (ready.warmed_up) Q_EMIT load_progress(request, 1.0, tr("Ready"));
        session_ = std::move(ready.session);
        summary_ = describe(*model_, *session_, summary_.path);
        summary_.weights = weights_description_;
        if (!ready.gpu_lost.isEmpty()) summary_.load_warnings << ready.gpu_lost;
        Q_EMIT model_loaded(request, summary_);
    } catch (const std::exception& e) {
        vulkan_ = false;  // the session in use stays; later sessions run where it runs
        Q_EMIT load_failed(request, summary_.path, QString::fromUtf8(e.what()));
    }
}

void EngineWorker::use_weights(quint64 request, std::shared_ptr<const Model> weights, const QString& description) {
    count_engine_call();
    if (!model_) {
        if (!is_stale(request)) Q_EMIT load_failed(request, summary_.path, tr("No model is loaded."));
        Q_EMIT request_finished(request);
        return;
    }
    const auto previous = std::move(weights_);
    const QString previous_description = std::exchange(weights_description_, weights ? description : QString());
    weights_ = std::move(weights);
    rebuild_session(request);
    if (session_->model_ptr() != session_model()) {  // the session could not be rebuilt: keep what it runs
        weights_ = previous;
        weights_description_ = previous_description;
    }
}

// The prompt's tokens: the text as it is, or the conversation rendered by the chat template.
std::vector<TokenId> EngineWorker::prompt_tokens(const GenerationRequest& request_data, QString& rendered) const {
    const Tokenizer& tokenizer = model_->tokenizer();
    if (!request_data.chat) return tokenizer.encode(request_data.prompt.toStdString(), true, true);
    const auto chat_template = chat::model_chat_template(model_->file());
    if (!chat_template) throw InvalidArgument("this model has no chat template: use raw completion");
    const chat::RenderedConversation conversation =
        chat::chat_prompt(*chat_template, tokenizer, chat_messages_json(request_data.history, request_data.prompt));
    rendered = QString::fromStdString(conversation.text);
    return conversation.ids;
}

GenerationReport EngineWorker::run_generation(quint64 request, const GenerationRequest& request_data, bool use_cache) {
    const Tokenizer& tokenizer = model_->tokenizer();
    QString rendered;
    const std::vector<TokenId> prompt = prompt_tokens(request_data, rendered);
    if (prompt.empty()) throw InvalidArgument("the prompt is empty");
    if (use_cache) {
        // Shown without the BOS token, whose absence also drops SentencePiece's leading
        // space, as llama.cpp's detokenizer does when removing special tokens.
        std::span<const TokenId> shown(prompt);
        if (!shown.empty() && shown.front() == tokenizer.bos_id()) shown = shown.subspan(1);
        Q_EMIT generation_started(request, static_cast<int>(prompt.size()),
                                request_data.chat ? request_data.prompt : QString::fromStdString(tokenizer.decode(shown)));
    }
    GenerationOptions options;
    options.n_predict = request_data.n_predict;
    options.use_kv_cache = use_cache;
    options.sampling.temperature = static_cast<float>(request_data.sampling.temperature);
    options.sampling.top_k = request_data.sampling.top_k;
    options.sampling.top_p = static_cast<float>(request_data.sampling.top_p);
    options.sampling.min_p = static_cast<float>(request_data.sampling.min_p);
    options.sampling.repeat_penalty = static_cast<float>(request_data.sampling.repeat_penalty);
    options.sampling.seed = request_data.sampling.seed;

    const int observer = session_->add_step_observer(
        [&](const StepEvent& e) { Q_EMIT step_completed(request, to_record(e, !use_cache)); });
    Utf8Stream stream;
    GenerationResult result;
    try {
        result = inferscope::generate(*session_, prompt, options, [&](TokenId id) {
            const bool shown = use_cache && !(request_data.chat && tokenizer.is_end_of_generation(id));
            if (shown) Q_EMIT token_generated(request, QString::fromStdString(stream.push(tokenizer.token_to_piece(id))));
            return !is_stale(request);
        });
    } catch (...) {
        session_->remove_step_observer(observer);
        throw;
    }
    session_->remove_step_observer(observer);

    GenerationReport report;
    report.recompute = !use_cache;
    report.n_prompt = result.timings.n_prompt;
    report.n_generated = result.timings.n_generated;
    report.prefill_ms = result.timings.prefill_ms;
    report.ttft_ms = result.timings.ttft_ms;
    report.decode_ms_per_token = result.timings.decode_ms_per_token;
    report.tokens_per_s = result.timings.tokens_per_s;
    report.stop_reason = QString::fromStdString(result.stop_reason);
    report.n_prompt_cached = result.timings.n_prompt_cached;
    if (request_data.chat) {
        std::vector<TokenId> reply = result.generated;
        if (!reply.empty() && tokenizer.is_end_of_generation(reply.back())) reply.pop_back();
        report.reply = QString::fromStdString(tokenizer.decode(reply));
        report.rendered_prompt = rendered;
    }
    return report;
}

void EngineWorker::generate(quint64 request, const GenerationRequest& request_data) {
    count_engine_call();
    if (!is_stale(request) && !session_) Q_EMIT generation_failed(request, tr("No model is loaded."));
    if (!is_stale(request) && session_) {
        try {
            Q_EMIT generation_finished(request, run_generation(request, request_data, true));
            if (request_data.compare_recompute && !is_stale(request)) {
                Q_EMIT generation_finished(request, run_generation(request, request_data, false));
            }
        } catch (const DeviceLostError& e) {
            Q_EMIT generation_failed(request, tr("%1\nThe model now runs on the CPU backend.").arg(QString::fromUtf8(e.what())));
            vulkan_ = false;
            replace_session(request);
        } catch (const std::exception& e) {
            Q_EMIT generation_failed(request, QString::fromUtf8(e.what()));
        }
    }
    Q_EMIT request_finished(request);
}

void EngineWorker::run_lab_job(quint64 job, const LabJob& lab_job, std::shared_ptr<const std::atomic<bool>> cancelled) {
    count_engine_call();
    const QString kind = lab_job.kind;
    // A job replaced while it waited in the queue never starts.
    if (cancelled->load()) {
        Q_EMIT lab_job_cancelled(kind, job);
        return;
    }
    const LabContext context(model_, threads_, cancelled, [this, kind, job](double fraction, const QString& stage) {
        Q_EMIT lab_job_progress(kind, job, fraction, stage);
    });
    try {
        std::any result = lab_job.run(context);
        if (cancelled->load()) {
            Q_EMIT lab_job_cancelled(kind, job);
        } else {
            Q_EMIT lab_job_finished(kind, job, result);
        }
    } catch (const LabJobCancelled&) {
        Q_EMIT lab_job_cancelled(kind, job);
    } catch (const std::exception& e) {
        Q_EMIT lab_job_failed(kind, job, QString::fromUtf8(e.what()));
    }
}

}  // namespace inferscope::ui
