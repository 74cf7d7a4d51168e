// `quantize`: write a model quantized with a GGUF-native scheme (q8_0, q4_0, q4_k, q6_k, iq4_nl,
// iq4_xs) as a GGUF file that llama.cpp and this engine load. Metadata and the tensors that are not
// quantized are copied unchanged.
#include <cstdio>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "app/cli/quant_cli_common.h"
#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/quant/gguf_export.h"

namespace inferscope::cli {
namespace {

struct QuantizeCliOptions {
    ModelOptions model;
    std::string scheme;
    std::string output;
    bool include_embeddings = false;
};

void run_quantize(const QuantizeCliOptions& o) {
    const QuantScheme scheme = parse_quant_scheme(o.scheme);
    llama_file_type(scheme);  // rejects INT and NF4 before any work
    require_regular_file_target(o.output);  // and a device or link as the output
    const auto model = load_model(o.model);
    QuantRunOptions options;
    options.include_embeddings = o.include_embeddings;
    options.n_threads = o.model.threads;
    options.progress = stderr_progress("quantize " + scheme.name());
    const QuantizedModel q = quantize_model(model, scheme, options);
    const GgufWriter writer = export_quantized_gguf(*q.model, scheme);
    writer.write_file(o.output);
    const SchemeSummary& s = q.report.schemes[0];
    if (o.model.json) {
        print_json({{"output", o.output},
                    {"scheme", scheme.name()},
                    {"matrices", q.report.matrices.size()},
                    {"quantized_parameters", q.report.quantized_parameters},
                    {"bits_per_weight", s.bits_per_weight},
                    {"weighted_relative_error", s.weighted_relative_error},
                    {"worst_matrix", s.worst_matrix},
                    {"worst_relative_error", s.worst_relative_error},
                    {"tensor_bytes", s.model_bytes},
                    {"seconds", q.report.seconds}});
        return;
    }
    std::printf("wrote %s: %zu matrices (%s parameters) as %s, %.4f bits/weight, weighted relative error %.4f "
                "(worst %s %.4f); tensors %s\n",
                o.output.c_str(), q.report.matrices.size(), with_thousands(q.report.quantized_parameters).c_str(),
                std::string(ggml_type_name(scheme.gguf_type)).c_str(), s.bits_per_weight, s.weighted_relative_error,
                s.worst_matrix.c_str(), s.worst_relative_error, labelled_size(s.model_bytes).c_str());
}

}  // namespace

void add_quantize_command(CLI::App& app) {
    auto o = std::make_shared<QuantizeCliOptions>();
    CLI::App* cmd = app.add_subcommand("quantize", "write the model quantized with q8_0, q4_0, q4_k, q6_k, iq4_nl or iq4_xs as a GGUF file");
    add_model_options(*cmd, o->model, /*with_runtime=*/false);
    cmd->add_option("-t,--threads", o->model.threads, "worker threads (default: physical cores)")
        ->check(non_negative());
    cmd->add_option("-s,--scheme", o->scheme, "q8_0, q4_0, q4_k, q6_k, iq4_nl or iq4_xs")->required();
    cmd->add_option("-o,--output", o->output, "output .gguf path")->required();
    cmd->add_flag("--embeddings", o->include_embeddings, "also quantize token_embd and output");
    cmd->callback([o] { run_quantize(*o); });
}

}  // namespace inferscope::cli
