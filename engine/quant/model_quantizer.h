#pragma once
// Applies quantization schemes to a loaded model's projection matrices (q, k, v, o, gate,
// up, down of every layer; optionally token_embd and output), in memory: the file is never
// touched. Produces a per-matrix report (error, outlier statistics, bits/weight) with
// aggregates, and optionally the quantized model itself, which executes GGUF schemes as
// their packed blocks and INT/NF4 schemes as exact dequantized F32 weights.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/formats/ggml_type.h"
#include "engine/quant/matrix_quantizer.h"
#include "engine/quant/scheme.h"

namespace inferscope {

class Model;
struct WeightMatrix;

struct QuantRunOptions {
    bool include_embeddings = false;  // also token_embd and (when not tied) output
    double k_sigma = 6.0;             // outlier threshold for the statistics
    int n_threads = 0;                // 0: one per physical core
    // Reported after each matrix (stage "quantizing", item its name); once cancelled, the
    // report covers the matrices done and no model is built.
    Progress progress;
};

// The matrices a run quantizes, in order: per layer q, k, v, o, gate, up, down; then
// token_embd and output (untied only) when include_embeddings.
std::vector<const WeightMatrix*> quantizable_matrices(const Model& model, bool include_embeddings);

struct MatrixInfo {
    std::string name;
    int64_t rows = 0;
    int64_t cols = 0;
    GgmlType source_type = GgmlType::F32;
    uint64_t source_bytes = 0;
    WeightStats stats;
};

struct MatrixResult {
    QuantError error;
    double bits_per_weight = 0;
    uint64_t storage_bytes = 0;
};

struct SchemeSummary {
    QuantScheme scheme;
    GgmlType execution_type = GgmlType::F32;
    std::vector<MatrixResult> matrices;  // aligned with QuantReport::matrices
    std::string worst_matrix;
    double worst_relative_error = 0;
    double mean_relative_error = 0;       // plain mean over matrices
    double weighted_relative_error = 0;   // weighted by each matrix's parameter count
    double bits_per_weight = 0;           // storage bits / parameters of the quantized matrices
    uint64_t quantized_bytes = 0;         // storage of the quantized matrices, scales included
    uint64_t model_bytes = 0;             // quantized matrices + every other tensor as stored in the file
};

struct QuantReport {
    std::vector<MatrixInfo> matrices;
    std::vector<SchemeSummary> schemes;
    uint64_t quantized_parameters = 0;  // elements of the matrices processed
    uint64_t model_parameters = 0;      // elements of every tensor in the file
    uint64_t reference_bytes = 0;       // bytes of every tensor in the file as stored
    double k_sigma = 6.0;
    double seconds = 0;
    int n_threads = 0;
    bool cancelled = false;
};

// Errors and statistics of each scheme on every selected matrix; statistics are computed
// once per matrix. Shapes are checked for every scheme before any work starts
// (InvalidArgument / UnsupportedError naming the matrix).
QuantReport analyze_quantization(const Model& model, std::span<const QuantScheme> schemes,
                                 const QuantRunOptions& options);

struct QuantizedModel {
    std::shared_ptr<const Model> model;  // null when cancelled
    QuantReport report;                  // one scheme
};

QuantizedModel quantize_model(const std::shared_ptr<const Model>& model, const QuantScheme& scheme,
                              const QuantRunOptions& options);

}  // namespace inferscope
