#pragma once
// Writing a quantized model as a GGUF file that llama.cpp loads: every metadata key and
// every tensor of the model's source file, in the same order and alignment, with the
// replaced (quantized) weights in their packed GGUF type.
#include <cstdint>

#include "engine/gguf/gguf_writer.h"
#include "engine/quant/scheme.h"

namespace inferscope {

class Model;

// llama.cpp's general.file_type value for a file whose quantized tensors use `scheme`
// (MOSTLY_Q8_0 = 7, MOSTLY_Q4_0 = 2, MOSTLY_Q4_K_S = 14, MOSTLY_Q6_K = 18, MOSTLY_IQ4_NL = 25,
// MOSTLY_IQ4_XS = 30).
uint32_t llama_file_type(const QuantScheme& scheme);

// `model` comes from quantize_model with a GGUF scheme. InvalidArgument for INT and NF4
// schemes (no GGUF type stores them) and for a model whose replaced weights are not in
// `scheme`'s type. general.file_type and general.quantization_version (2) are set.
GgufWriter export_quantized_gguf(const Model& model, const QuantScheme& scheme);

}  // namespace inferscope
