#pragma once
// Plain values that cross the thread boundary between the engine worker and the UI, as
// queued-signal arguments.
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>
#include <atomic>

#include "engine/backend/default_backend.h"
#include "engine/model/model_config.h"
#include "engine/plan/kv_formula.h"

namespace inferscope::ui {

// Calls to the worker's entry points, and how many of them ran on the UI thread (none may:
// a test drives every panel and checks).
struct EngineCallCounts {
    std::atomic<quint64> total{0};
    std::atomic<quint64> on_ui_thread{0};
};

// What the app shows about a model; the preview part is read from the GGUF header alone.
struct ModelSummary {
    QString path;               // empty for the default built-in model, "builtin:NAME" for another
    QString name;
    bool builtin = false;
    bool synthetic = false;
    QString architecture;
    qint64 parameters = 0;
    qint64 file_bytes = 0;
    QString fingerprint;        // GgufFile::content_fingerprint()
    ModelConfig config;         // the shapes the header declares; zeros when they cannot be read
    QStringList tensor_types;   // "Q4_K x 96", ...
    QString tokenizer;          // filled once the model is loaded
    QString backend;            // filled once the model is loaded
    int context_size = 0;       // the session's context, filled once loaded
    QString weights;            // empty: the file's own weights; else what generation runs instead
    QString chat_template;      // tokenizer.chat_template; empty when the file has none
    QString chat_family;        // "chatml", "llama3", "gemma", ...; empty without a template
    QString bos_text, eos_text; // the vocabulary's BOS and EOS texts, as templates see them
    QStringList load_warnings;  // what the file said that could not be used (filled once loaded)

    // KV-cache bytes per token of an F16 cache with `kv_heads` KV heads (the engine's formula).
    qint64 kv_bytes_per_token(int kv_heads) const {
        return static_cast<qint64>(formula_kv_bytes_per_token(config, kv_heads, KvDtype::F16));
    }
};

struct SamplingSettings {
    double temperature = 0.8;
    int top_k = 40;
    double top_p = 0.95;
    double min_p = 0.05;
    double repeat_penalty = 1.0;
    quint64 seed = 42;
};

// One message of a conversation.
struct ChatMessageText {
    QString role;  // "system", "user", "assistant"
    QString content;
};

struct GenerationRequest {
    QString prompt;  // the text to complete, or (chat) the user's new message
    // Chat: the prompt is the next user message of `history`, rendered with the model's chat
    // template; generation stops at the end of the assistant's turn.
    bool chat = false;
    QVector<ChatMessageText> history;  // the system prompt and the turns so far
    int n_predict = 64;
    SamplingSettings sampling;
    bool compare_recompute = false;  // afterwards, run the same generation without a KV cache
};

// One forward step, as the charts plot it.
struct StepRecord {
    qint64 step = 0;
    QString phase;            // "prefill", "decode", "mixed"
    bool recompute = false;   // from the no-cache comparison run
    int n_tokens = 0;
    int context_length = 0;
    double wall_ms = 0;
    qint64 kv_bytes_in_use = 0;
    qint64 kv_bytes_reserved = 0;
};

struct GenerationReport {
    bool recompute = false;
    int n_prompt = 0;
    int n_generated = 0;
    double prefill_ms = 0;
    double ttft_ms = 0;
    double decode_ms_per_token = 0;
    double tokens_per_s = 0;
    QString stop_reason;
    int n_prompt_cached = 0;  // prompt tokens whose KV blocks an earlier turn left in the cache
    QString rendered_prompt;  // chat: the text the template made of the conversation
    QString reply;            // chat: the assistant's text without the end-of-turn token
};

}  // namespace inferscope::ui

Q_DECLARE_METATYPE(inferscope::ui::ModelSummary)
Q_DECLARE_METATYPE(inferscope::ui::GenerationRequest)
Q_DECLARE_METATYPE(inferscope::ui::StepRecord)
Q_DECLARE_METATYPE(inferscope::ui::GenerationReport)
