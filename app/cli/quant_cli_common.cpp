#include "app/cli/quant_cli_common.h"

#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/model/model.h"

namespace inferscope::cli {

std::vector<QuantScheme> parse_schemes(const std::vector<std::string>& texts) {
    std::vector<QuantScheme> schemes;
    schemes.reserve(texts.size());
    for (const std::string& text : texts) schemes.push_back(parse_quant_scheme(text));
    return schemes;
}

std::string with_thousands(uint64_t value) {
    const std::string digits = std::to_string(value);
    std::string grouped;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) grouped.push_back(',');
        grouped.push_back(digits[i]);
    }
    return grouped;
}

double bytes_to_gb(uint64_t bytes) { return static_cast<double>(bytes) / 1e9; }
double bytes_to_gib(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << 30); }

std::string labelled_size(uint64_t bytes) {
    char text[96];
    std::snprintf(text, sizeof text, " bytes (%.3f GB, %.3f GiB)", bytes_to_gb(bytes), bytes_to_gib(bytes));
    return with_thousands(bytes) + text;
}

std::string execution_label(const QuantScheme& scheme) {
    if (scheme.executes_packed()) return "packed " + std::string(ggml_type_name(scheme.gguf_type)) + " blocks";
    return "dequantized F32";
}

CompanionModel companion_model(const std::shared_ptr<const Model>& base, const std::string& base_label,
                               const CompanionChoice& choice, int n_threads) {
    if (choice.path.empty() == choice.scheme.empty()) {
        throw InvalidArgument("give exactly one of " + choice.path_flag + " FILE and " + choice.scheme_flag + " SCHEME");
    }
    if (!choice.path.empty()) return {Model::load(choice.path), choice.path};
    const QuantScheme scheme = parse_quant_scheme(choice.scheme);
    QuantRunOptions q;
    q.n_threads = n_threads;
    q.progress = stderr_progress(scheme.name());
    return {quantize_model(base, scheme, q).model, base_label + " under " + scheme.name()};
}

}  // namespace inferscope::cli
