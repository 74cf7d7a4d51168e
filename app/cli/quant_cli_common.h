#pragma once
// Helpers shared by the quantization commands (quant, eval, quantize): scheme flags,
// labelled sizes, progress lines on stderr.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/quant/model_quantizer.h"
#include "engine/quant/scheme.h"

namespace inferscope::cli {

inline constexpr const char* kSchemeHelp =
    "quantization scheme: int<b>:tensor|row|g<N> (b = 2..8), nf4[:<block>], q8_0, q4_0, q4_k, q6_k, iq4_nl, iq4_xs; "
    "INT/NF4 take :f16|bf16|f32 for the scale format (default f16); repeatable";

std::vector<QuantScheme> parse_schemes(const std::vector<std::string>& texts);

// "494,032,768"
std::string with_thousands(uint64_t value);
// "988,065,536 bytes (0.99 GB, 0.92 GiB)": GB = 10^9 bytes, GiB = 2^30 bytes.
std::string labelled_size(uint64_t bytes);
double bytes_to_gb(uint64_t bytes);
double bytes_to_gib(uint64_t bytes);

// How the engine runs a scheme's weights: "packed Q4_K blocks" or "dequantized F32".
std::string execution_label(const QuantScheme& scheme);

// A second model beside a loaded one (a draft or a student): a GGUF file, or the loaded
// model quantized in memory under a scheme. The flags name the two options in errors.
struct CompanionChoice {
    std::string path;
    std::string scheme;
    std::string path_flag;    // "--draft"
    std::string scheme_flag;  // "--draft-scheme"
};
struct CompanionModel {
    std::shared_ptr<const Model> model;
    std::string label;  // "FILE", or "BASE_LABEL under SCHEME"
};
// InvalidArgument unless exactly one of path and scheme is given.
CompanionModel companion_model(const std::shared_ptr<const Model>& base, const std::string& base_label,
                               const CompanionChoice& choice, int n_threads);

}  // namespace inferscope::cli
