#include "engine/quant/model_quantizer.h"

#include <chrono>

#include "engine/core/thread_pool.h"
#include "engine/model/model.h"

namespace inferscope {
namespace {

MatrixInfo describe(const WeightMatrix& m) {
    MatrixInfo info;
    info.name = m.name;
    info.rows = m.rows;
    info.cols = m.cols;
    info.source_type = m.type;
    info.source_bytes = m.bytes();
    return info;
}

// Worst, mean and parameter-weighted errors, bits/weight and sizes over the matrices done.
void summarize(QuantReport& report, SchemeSummary& summary, uint64_t reference_bytes_of_matrices) {
    double error_sum = 0;
    double weighted_sum = 0;
    double parameters = 0;
    summary.quantized_bytes = 0;
    for (size_t i = 0; i < summary.matrices.size(); ++i) {
        const MatrixResult& m = summary.matrices[i];
        const double count = static_cast<double>(report.matrices[i].rows) * static_cast<double>(report.matrices[i].cols);
        error_sum += m.error.relative;
        weighted_sum += m.error.relative * count;
        parameters += count;
        summary.quantized_bytes += m.storage_bytes;
        if (summary.worst_matrix.empty() || m.error.relative > summary.worst_relative_error) {
            summary.worst_matrix = report.matrices[i].name;
            summary.worst_relative_error = m.error.relative;
        }
    }
    if (!summary.matrices.empty()) {
        summary.mean_relative_error = error_sum / static_cast<double>(summary.matrices.size());
        summary.weighted_relative_error = weighted_sum / parameters;
        summary.bits_per_weight = static_cast<double>(summary.quantized_bytes) * 8.0 / parameters;
    }
    summary.model_bytes = report.reference_bytes - reference_bytes_of_matrices + summary.quantized_bytes;
}

void check_shapes(const std::vector<const WeightMatrix*>& matrices, std::span<const QuantScheme> schemes) {
    for (const QuantScheme& scheme : schemes) {
        for (const WeightMatrix* m : matrices) scheme.check_shape(m->rows, m->cols, m->name);
    }
}

// The shared loop: every matrix once as F32 and its statistics, then each scheme. When
// `kept` is given (one scheme), the quantized bytes are moved there.
QuantReport run_quantization(const Model& model, std::span<const QuantScheme> schemes, const QuantRunOptions& options,
                             std::vector<ReplacementWeight>* kept) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<const WeightMatrix*> matrices = quantizable_matrices(model, options.include_embeddings);
    check_shapes(matrices, schemes);
    ThreadPool pool(options.n_threads > 0 ? options.n_threads : ThreadPool::default_thread_count());

    QuantReport report;
    report.k_sigma = options.k_sigma;
    report.n_threads = pool.size();
    report.model_parameters = model.parameter_count();
    for (const auto& t : model.file().tensors()) report.reference_bytes += t.byte_count;
    for (const QuantScheme& scheme : schemes) {
        SchemeSummary summary;
        summary.scheme = scheme;
        summary.execution_type = scheme.execution_type();
        report.schemes.push_back(std::move(summary));
    }
    uint64_t reference_bytes_of_matrices = 0;
    // Buffers reused from matrix to matrix: fresh pages for every matrix cost more (page
    // faults, zeroing) than the quantization itself.
    std::vector<float> w;          // [rows x cols] of the current matrix
    std::vector<uint8_t> scratch;  // its quantized bytes, when they are not kept
    const int total = static_cast<int>(matrices.size());
    for (int index = 0; index < total; ++index) {
        const WeightMatrix& m = *matrices[static_cast<size_t>(index)];
        // For F32 sources this copy is the price of one code path; it is small next to quantizing.
        matrix_to_f32(m, pool, w);
        MatrixInfo info = describe(m);
        info.stats = weight_stats(w.data(), m.rows * m.cols, options.k_sigma, pool);
        for (SchemeSummary& summary : report.schemes) {
            QuantizedMatrix q = quantize_matrix(summary.scheme, w.data(), m.rows, m.cols,
                                                static_cast<float>(info.stats.max_abs), pool,
                                                kept != nullptr ? std::vector<uint8_t>() : std::move(scratch));
            summary.matrices.push_back({q.error, summary.scheme.bits_per_weight(m.rows, m.cols),
                                        summary.scheme.storage_bytes(m.rows, m.cols)});
            if (kept != nullptr) {
                kept->push_back({m.name, q.type, std::move(q.bytes)});
            } else {
                scratch = std::move(q.bytes);
            }
        }
        report.quantized_parameters += static_cast<uint64_t>(m.rows * m.cols);
        reference_bytes_of_matrices += m.bytes();
        report.matrices.push_back(std::move(info));
        options.progress.report("quantizing", index + 1, total, m.name);
        if (options.progress.cancelled()) {
            report.cancelled = true;
            break;
        }
    }
    for (SchemeSummary& summary : report.schemes) summarize(report, summary, reference_bytes_of_matrices);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
}

}  // namespace

std::vector<const WeightMatrix*> quantizable_matrices(const Model& model, bool include_embeddings) {
    std::vector<const WeightMatrix*> matrices;
    for (const LayerWeights& L : model.layers()) {
        for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) matrices.push_back(w);
    }
    if (include_embeddings) {
        matrices.push_back(&model.token_embedding());
        if (!model.config().tied_output) matrices.push_back(&model.output());
    }
    return matrices;
}

QuantReport analyze_quantization(const Model& model, std::span<const QuantScheme> schemes,
                                 const QuantRunOptions& options) {
    return run_quantization(model, schemes, options, nullptr);
}

QuantizedModel quantize_model(const std::shared_ptr<const Model>& model, const QuantScheme& scheme,
                              const QuantRunOptions& options) {
    std::vector<ReplacementWeight> weights;
    QuantizedModel result;
    result.report = run_quantization(*model, std::span<const QuantScheme>(&scheme, 1), options, &weights);
    if (!result.report.cancelled) result.model = Model::with_replaced_weights(model, std::move(weights));
    return result;
}

}  // namespace inferscope
