// `quant`: what each quantization scheme does to a model's weights, matrix by matrix:
// relative and max error, outlier statistics of W, bits/weight and model size. Nothing is
// written; the model file is only read.
#include <cstdio>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "app/cli/quant_cli_common.h"
#include "engine/core/error.h"

namespace inferscope::cli {
namespace {

struct QuantCliOptions {
    ModelOptions model;
    std::vector<std::string> schemes;
    double k_sigma = 6.0;
    bool csv = false;
    bool summary_only = false;
    bool include_embeddings = false;
};

nlohmann::json matrix_json(const QuantReport& r, size_t i) {
    const MatrixInfo& m = r.matrices[i];
    nlohmann::json per_scheme = nlohmann::json::object();
    for (const SchemeSummary& s : r.schemes) {
        const MatrixResult& q = s.matrices[i];
        per_scheme[s.scheme.name()] = {{"relative_error", q.error.relative},
                                       {"max_abs_error", q.error.max_abs},
                                       {"bits_per_weight", q.bits_per_weight},
                                       {"bytes", q.storage_bytes}};
    }
    return {{"name", m.name},
            {"rows", m.rows},
            {"cols", m.cols},
            {"source_type", ggml_type_name(m.source_type)},
            {"mean_abs", m.stats.mean_abs},
            {"std", m.stats.std},
            {"max_abs", m.stats.max_abs},
            {"max_over_std", m.stats.max_over_std},
            {"beyond_k_sigma", m.stats.beyond_k_sigma},
            {"beyond_k_sigma_share", m.stats.beyond_share},
            {"schemes", per_scheme}};
}

nlohmann::json size_json(uint64_t bytes) {
    return {{"bytes", bytes}, {"GB", bytes_to_gb(bytes)}, {"GiB", bytes_to_gib(bytes)}};
}

nlohmann::json report_json(const Model& model, const QuantReport& r) {
    nlohmann::json matrices = nlohmann::json::array();
    for (size_t i = 0; i < r.matrices.size(); ++i) matrices.push_back(matrix_json(r, i));
    nlohmann::json schemes = nlohmann::json::array();
    for (const SchemeSummary& s : r.schemes) {
        schemes.push_back({{"scheme", s.scheme.name()},
                           {"execution", execution_label(s.scheme)},
                           {"bits_per_weight", s.bits_per_weight},
                           {"worst_matrix", s.worst_matrix},
                           {"worst_relative_error", s.worst_relative_error},
                           {"mean_relative_error", s.mean_relative_error},
                           {"weighted_relative_error", s.weighted_relative_error},
                           {"quantized_matrices_size", size_json(s.quantized_bytes)},
                           {"model_size", size_json(s.model_bytes)}});
    }
    return {{"model", model.config().name},
            {"file", model.file().path()},
            {"matrix_count", r.matrices.size()},
            {"quantized_parameters", r.quantized_parameters},
            {"model_parameters", r.model_parameters},
            {"reference_size", size_json(r.reference_bytes)},
            {"k_sigma", r.k_sigma},
            {"threads", r.n_threads},
            {"seconds", r.seconds},
            {"matrices", matrices},
            {"schemes", schemes}};
}

void print_csv(const QuantReport& r) {
    std::printf("matrix,rows,cols,source_type,mean_abs,std,max_abs,max_over_std,k_sigma,beyond_k_sigma,"
                "beyond_k_sigma_share,scheme,bits_per_weight,bytes,relative_error,max_abs_error\n");
    for (size_t i = 0; i < r.matrices.size(); ++i) {
        const MatrixInfo& m = r.matrices[i];
        for (const SchemeSummary& s : r.schemes) {
            const MatrixResult& q = s.matrices[i];
            std::printf("%s,%lld,%lld,%s,%.9g,%.9g,%.9g,%.6g,%g,%lld,%.9g,%s,%.9g,%llu,%.9g,%.9g\n", m.name.c_str(),
                        static_cast<long long>(m.rows), static_cast<long long>(m.cols),
                        std::string(ggml_type_name(m.source_type)).c_str(), m.stats.mean_abs, m.stats.std,
                        m.stats.max_abs, m.stats.max_over_std, r.k_sigma, static_cast<long long>(m.stats.beyond_k_sigma),
                        m.stats.beyond_share, s.scheme.name().c_str(), q.bits_per_weight,
                        static_cast<unsigned long long>(q.storage_bytes), q.error.relative, q.error.max_abs);
        }
    }
}

void print_matrix_table(const QuantReport& r) {
    std::printf("%-28s %13s %9s %9s %9s %8s %18s", "matrix", "rows x cols", "mean|w|", "std", "max|w|", "max/std",
                ("beyond " + std::to_string(static_cast<int>(r.k_sigma)) + " sigma").c_str());
    for (const SchemeSummary& s : r.schemes) std::printf(" | %-12s %9s", (s.scheme.name() + " rel").c_str(), "max err");
    std::printf("\n");
    for (size_t i = 0; i < r.matrices.size(); ++i) {
        const MatrixInfo& m = r.matrices[i];
        const std::string shape = std::to_string(m.rows) + " x " + std::to_string(m.cols);
        std::printf("%-28s %13s %9.5f %9.5f %9.5f %8.1f %9s (%5.3f%%)", m.name.c_str(), shape.c_str(), m.stats.mean_abs,
                    m.stats.std, m.stats.max_abs, m.stats.max_over_std, with_thousands(static_cast<uint64_t>(m.stats.beyond_k_sigma)).c_str(),
                    100.0 * m.stats.beyond_share);
        for (const SchemeSummary& s : r.schemes) {
            std::printf(" | %-12.4f %9.5f", s.matrices[i].error.relative, s.matrices[i].error.max_abs);
        }
        std::printf("\n");
    }
    std::printf("\n");
}

void print_summary(const QuantReport& r) {
    std::printf("%-14s %8s  %-20s %-38s %9s %9s  %s\n", "scheme", "bits/w", "executes as", "worst matrix (rel. error)",
                "mean rel", "wtd rel", "model size (quantized matrices + other tensors as stored)");
    for (const SchemeSummary& s : r.schemes) {
        char worst[96];
        std::snprintf(worst, sizeof worst, "%s (%.4f)", s.worst_matrix.c_str(), s.worst_relative_error);
        std::printf("%-14s %8.4f  %-20s %-38s %9.4f %9.4f  %s\n", s.scheme.name().c_str(), s.bits_per_weight,
                    execution_label(s.scheme).c_str(), worst, s.mean_relative_error, s.weighted_relative_error,
                    labelled_size(s.model_bytes).c_str());
    }
    std::printf("%-14s %8s  %-20s %-38s %9s %9s  %s\n", "reference", "-", "as stored", "-", "-", "-",
                labelled_size(r.reference_bytes).c_str());
    std::printf("(mean rel: plain mean over matrices; wtd rel: weighted by parameters; GB = 10^9 bytes, GiB = 2^30 bytes)\n");
}

void run_quant(const QuantCliOptions& o) {
    if (o.csv && o.model.json) throw InvalidArgument("--csv and --json are exclusive");
    const std::vector<QuantScheme> schemes = parse_schemes(o.schemes);
    const auto model = load_model(o.model);
    QuantRunOptions options;
    options.include_embeddings = o.include_embeddings;
    options.k_sigma = o.k_sigma;
    options.n_threads = o.model.threads;
    options.progress = stderr_progress("quant");
    const QuantReport r = analyze_quantization(*model, schemes, options);
    std::fprintf(stderr, "quant: %zu matrices, %s parameters, %zu scheme(s) in %.2f s on %d threads\n",
                 r.matrices.size(), with_thousands(r.quantized_parameters).c_str(), schemes.size(), r.seconds,
                 r.n_threads);
    if (o.model.json) return print_json(report_json(*model, r));
    if (o.csv) return print_csv(r);
    std::printf("quant: %s, %zu matrices, %s parameters (of %s in the file), outliers beyond %g sigma\n\n",
                model->config().name.c_str(), r.matrices.size(), with_thousands(r.quantized_parameters).c_str(),
                with_thousands(r.model_parameters).c_str(), r.k_sigma);
    if (!o.summary_only) print_matrix_table(r);
    print_summary(r);
}

}  // namespace

void add_quant_command(CLI::App& app) {
    auto o = std::make_shared<QuantCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "quant", "per-matrix quantization error, outlier statistics, bits/weight and model size for each scheme");
    add_model_options(*cmd, o->model, /*with_runtime=*/false);
    cmd->add_option("-t,--threads", o->model.threads, "worker threads (default: physical cores)")
        ->check(non_negative());
    cmd->add_option("-s,--scheme", o->schemes, kSchemeHelp)->required();
    cmd->add_option("--ksigma", o->k_sigma, "outlier threshold in standard deviations")
        ->check(positive())
        ->capture_default_str();
    cmd->add_flag("--csv", o->csv, "one CSV row per matrix and scheme on stdout");
    cmd->add_flag("--summary", o->summary_only, "only the per-scheme summary (no per-matrix table)");
    cmd->add_flag("--embeddings", o->include_embeddings, "also quantize token_embd and output");
    cmd->callback([o] { run_quant(*o); });
}

}  // namespace inferscope::cli
