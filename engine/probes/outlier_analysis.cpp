#include "engine/probes/outlier_analysis.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope {

void TensorCapture::add_rows(const float* rows, int64_t n_rows, int64_t n_dims, std::span<const BatchToken> tokens) {
    if (n_dims != n_dims_) {
        throw InvalidArgument("tensor has " + std::to_string(n_dims) + " columns, the capture expects " + std::to_string(n_dims_));
    }
    values_.insert(values_.end(), rows, rows + static_cast<size_t>(n_rows * n_dims));
    for (int64_t r = 0; r < n_rows; ++r) {
        positions_.push_back(static_cast<size_t>(r) < tokens.size() ? tokens[static_cast<size_t>(r)].pos : -1);
    }
}

namespace {

void validate_request(const InferenceSession& session, std::span<const TokenId> prompt, const OutlierAnalysisOptions& o) {
    const ModelConfig& config = session.model().config();
    const int width = block_tensor_width(config, o.tensor);  // throws for an unknown tensor
    if (o.top_k < 1 || o.top_k >= width) {
        throw InvalidArgument("top-k " + std::to_string(o.top_k) + " must be in [1, " + std::to_string(width - 1) + "] for " +
                              o.tensor + " (" + std::to_string(width) + " dimensions)");
    }
    if (o.int8_layer < -1 || o.int8_layer >= config.n_layer) {
        throw InvalidArgument("layer " + std::to_string(o.int8_layer) + " is out of range (the model has " +
                              std::to_string(config.n_layer) + " layers: 0.." + std::to_string(config.n_layer - 1) + ")");
    }
    if (o.chunk_tokens < 1) throw InvalidArgument("chunk size must be at least 1 token, got " + std::to_string(o.chunk_tokens));
    if (prompt.empty()) throw InvalidArgument("the prompt is empty (no tokens to analyse)");
    if (static_cast<int64_t>(prompt.size()) > session.context_size()) {
        throw InvalidArgument("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size of " +
                              std::to_string(session.context_size()));
    }
}

// Frees the analysed sequence however the analysis ends.
class SequenceGuard {
public:
    explicit SequenceGuard(InferenceSession& session) : session_(session), seq_(session.new_sequence()) {}
    ~SequenceGuard() { session_.free_sequence(seq_); }
    SequenceGuard(const SequenceGuard&) = delete;
    SequenceGuard& operator=(const SequenceGuard&) = delete;
    SeqId id() const { return seq_; }

private:
    InferenceSession& session_;
    SeqId seq_;
};

// Feeds the prompt in chunks. Only the last token asks for logits: the analysis needs none,
// and each costs a vocabulary-wide matmul.
void run_prompt(InferenceSession& session, std::span<const TokenId> prompt, int chunk_tokens) {
    SequenceGuard seq(session);
    for (size_t start = 0; start < prompt.size(); start += static_cast<size_t>(chunk_tokens)) {
        const size_t end = std::min(prompt.size(), start + static_cast<size_t>(chunk_tokens));
        Batch batch;
        for (size_t i = start; i < end; ++i) batch.push_back({prompt[i], seq.id(), static_cast<int32_t>(i), i + 1 == prompt.size()});
        session.decode(batch);
    }
}

}  // namespace

OutlierReport analyze_outliers(InferenceSession& session, std::span<const TokenId> prompt, const OutlierAnalysisOptions& o) {
    validate_request(session, prompt, o);
    const ModelConfig& config = session.model().config();
    const int width = block_tensor_width(config, o.tensor);
    const int int8_layer = o.int8_layer >= 0 ? o.int8_layer : config.n_layer / 2;

    std::vector<DimensionAbsMax> per_layer(static_cast<size_t>(config.n_layer), DimensionAbsMax(width));
    TensorCapture captured(width);
    ActivationProbe probe;
    probe.subscribe(o.tensor, std::nullopt, [&](const NamedTensor& t) {
        if (t.layer < 0 || t.layer >= config.n_layer) return;
        per_layer[static_cast<size_t>(t.layer)].add_rows(t.data, t.rows, t.cols);
    });
    probe.subscribe(o.tensor, int8_layer, [&](const NamedTensor& t) { captured.add_rows(t.data, t.rows, t.cols, t.tokens); });
    {
        ProbeAttachment attached(session.backend(), probe);
        run_prompt(session, prompt, o.chunk_tokens);
    }

    OutlierReport report;
    report.tensor = o.tensor;
    report.n_tokens = static_cast<int64_t>(prompt.size());
    report.n_dims = width;
    report.top_k = o.top_k;
    for (int layer = 0; layer < config.n_layer; ++layer) {
        report.layers.push_back(summarize_layer(layer, per_layer[static_cast<size_t>(layer)], o.top_k));
    }
    report.persistence = top_dimension_persistence(report.layers);
    report.int8_layer = int8_layer;
    report.int8 = analyze_int8(captured.values(), captured.n_tokens(), captured.n_dims(), o.top_k);
    return report;
}

}  // namespace inferscope
