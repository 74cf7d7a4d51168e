#pragma once
// The precision of the activations that enter the linear layers (q, k, v, o, gate, up,
// down of every block; the output head always sees F32). The default keeps them in F32;
// the others emulate INT8 activation kernels so that their effect on quality can be
// measured (engine/eval/quality.h):
//   int8:tensor   one absmax scale over the whole input of the product (every token of the step)
//   int8:token    one absmax scale per token (row of the input)
//   llm.int8[:T]  LLM.int8()'s decomposition: the input dimensions (columns) where any token
//                 of the step has |x| > T (default 6.0) stay in F32, the rest is INT8 per token
// INT8 follows engine/formats/int8_absmax.h; the quantized values are dequantized before the
// product, which is exact for integer dot products of the codes scaled afterwards, up to
// float summation order.
#include <string>
#include <string_view>

namespace inferscope {

enum class ActivationMode { F32, Int8Tensor, Int8Token, LlmInt8 };

struct ActivationPrecision {
    static constexpr float kDefaultOutlierThreshold = 6.0f;

    ActivationMode mode = ActivationMode::F32;
    float outlier_threshold = kDefaultOutlierThreshold;  // |x| above which a column stays F32 (LlmInt8 only)

    bool is_f32() const { return mode == ActivationMode::F32; }
};

// "f32", "int8:tensor", "int8:token", "llm.int8" or "llm.int8:<threshold>" (case-insensitive;
// threshold a finite number > 0). InvalidArgument naming the text otherwise.
ActivationPrecision parse_activation_precision(std::string_view text);

// The canonical text that parse_activation_precision reads back: "llm.int8:6".
std::string activation_precision_name(const ActivationPrecision& precision);

}  // namespace inferscope
