// Dispatch for the weight formats (quant.h, quant_ref.h) and the plain float types.
//
// Choices, all made to match llama.cpp's CPU backend (ggml-cpu) on x86-64:
//  * F16 and BF16 encode with round-to-nearest-even (engine/core/fp16.h), as ggml does.
//  * F32/F16/BF16 dot products: each product is formed in float (after converting both
//    operands to float) and accumulated in double, then rounded to float once at the end;
//    this is ggml's scalar ggml_vec_dot_{f32,f16,bf16} (its ggml_float is double). ggml's
//    SIMD paths accumulate in several float lanes instead, so they can differ from this in
//    the last bits.
//  * Activation encodings: see quant_legacy.cpp (Q8_0/Q8_1: x86 AVX rounding, ties to even)
//    and quant_kquants_quantize.cpp (Q8_K: quantize_row_q8_K_ref, which x86 uses as is).
#include "engine/formats/quant.h"

#include <array>
#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "engine/core/fp16.h"
#include "engine/formats/quant_impl.h"
#include "engine/formats/quant_ref.h"

namespace inferscope {
namespace {

using namespace quant_detail;

using DequantizeFn = void (*)(const uint8_t*, float*, int64_t);
using QuantizeFn = void (*)(const float*, uint8_t*, int64_t);
using DotFn = float (*)(int64_t, const uint8_t*, const uint8_t*);

// ---- plain float types (one element per "block")

void dequantize_f32(const uint8_t* src, float* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void quantize_f32(const float* src, uint8_t* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

template <float (*ToFloat)(uint16_t)>
void dequantize_half(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, sizeof(h));
        dst[i] = ToFloat(h);
    }
}

template <uint16_t (*FromFloat)(float)>
void quantize_half(const float* src, uint8_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = FromFloat(src[i]);
        std::memcpy(dst + 2 * i, &h, sizeof(h));
    }
}

// A dot product of two rows of `Stored` values, each product in float, summed in double.
template <typename Stored, float (*ToFloat)(Stored)>
float dot_stored(int64_t n, const uint8_t* w, const uint8_t* x) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        Stored a, b;
        std::memcpy(&a, w + sizeof(Stored) * i, sizeof(a));
        std::memcpy(&b, x + sizeof(Stored) * i, sizeof(b));
        sum += static_cast<double>(ToFloat(a) * ToFloat(b));
    }
    return static_cast<float>(sum);
}

float f32_as_is(float value) { return value; }

// ---- the table

struct Format {
    GgmlType type;
    DequantizeFn dequantize;
    QuantizeFn quantize;            // quantize_row(): activation semantics where they differ
    QuantizeFn quantize_reference;  // quantize_row_reference(): ggml's *_ref
    GgmlType dot_type;
    DotFn dot;  // nullptr: not a weight type (no dot product)
};

constexpr auto F16_TO_F32 = &fp16_to_fp32;
constexpr auto BF16_TO_F32 = &bf16_to_fp32;

const std::array kFormats = {
    Format{GgmlType::F32, dequantize_f32, quantize_f32, quantize_f32, GgmlType::F32, dot_stored<float, f32_as_is>},
    Format{GgmlType::F16, dequantize_half<F16_TO_F32>, quantize_half<&fp32_to_fp16>,
           quantize_half<&fp32_to_fp16>, GgmlType::F16, dot_stored<uint16_t, F16_TO_F32>},
    Format{GgmlType::BF16, dequantize_half<BF16_TO_F32>, quantize_half<&fp32_to_bf16>,
           quantize_half<&fp32_to_bf16>, GgmlType::BF16, dot_stored<uint16_t, BF16_TO_F32>},
    Format{GgmlType::Q4_0, dequantize_q4_0, quantize_q4_0_ref, quantize_q4_0_ref, GgmlType::Q8_0, vec_dot_q4_0_q8_0},
    Format{GgmlType::Q4_1, dequantize_q4_1, quantize_q4_1_ref, quantize_q4_1_ref, GgmlType::Q8_1, vec_dot_q4_1_q8_1},
    Format{GgmlType::Q5_0, dequantize_q5_0, quantize_q5_0_ref, quantize_q5_0_ref, GgmlType::Q8_0, vec_dot_q5_0_q8_0},
    Format{GgmlType::Q5_1, dequantize_q5_1, quantize_q5_1_ref, quantize_q5_1_ref, GgmlType::Q8_1, vec_dot_q5_1_q8_1},
    Format{GgmlType::Q8_0, dequantize_q8_0, quantize_q8_0_activations, quantize_q8_0_ref, GgmlType::Q8_0,
           vec_dot_q8_0_q8_0},
    Format{GgmlType::Q8_1, dequantize_q8_1, quantize_q8_1_activations, quantize_q8_1_ref, GgmlType::Q8_1, nullptr},
    Format{GgmlType::Q2_K, dequantize_q2_K, quantize_q2_K_ref, quantize_q2_K_ref, GgmlType::Q8_K, vec_dot_q2_K_q8_K},
    Format{GgmlType::Q3_K, dequantize_q3_K, quantize_q3_K_ref, quantize_q3_K_ref, GgmlType::Q8_K, vec_dot_q3_K_q8_K},
    Format{GgmlType::Q4_K, dequantize_q4_K, quantize_q4_K_ref, quantize_q4_K_ref, GgmlType::Q8_K, vec_dot_q4_K_q8_K},
    Format{GgmlType::Q5_K, dequantize_q5_K, quantize_q5_K_ref, quantize_q5_K_ref, GgmlType::Q8_K, vec_dot_q5_K_q8_K},
    Format{GgmlType::Q6_K, dequantize_q6_K, quantize_q6_K_ref, quantize_q6_K_ref, GgmlType::Q8_K, vec_dot_q6_K_q8_K},
    Format{GgmlType::Q8_K, dequantize_q8_K, quantize_q8_K_ref, quantize_q8_K_ref, GgmlType::Q8_K, nullptr},
    Format{GgmlType::IQ4_NL, dequantize_iq4_nl, quantize_iq4_nl, quantize_iq4_nl, GgmlType::Q8_0,
           vec_dot_iq4_nl_q8_0},
    Format{GgmlType::IQ4_XS, dequantize_iq4_xs, quantize_iq4_xs, quantize_iq4_xs, GgmlType::Q8_K,
           vec_dot_iq4_xs_q8_K},
};

std::string describe_type(GgmlType type) {
    if (const auto traits = ggml_type_traits(static_cast<uint32_t>(type))) return std::string(traits->name);
    return "type id " + std::to_string(static_cast<uint32_t>(type));
}

[[noreturn]] void throw_unsupported(const char* operation, GgmlType type, bool with_encodings) {
    std::string message = std::string(operation) + ": tensor type " + describe_type(type) +
                          " is not supported; supported types: " + supported_weight_type_names();
    if (with_encodings) message += " (and Q8_1, Q8_K as activation encodings)";
    throw UnsupportedError(message);
}

// The format of `type`, checking that `n` is a whole number of its blocks.
const Format& format_for(const char* operation, GgmlType type, int64_t n, bool with_encodings) {
    for (const auto& format : kFormats) {
        if (format.type != type) continue;
        const int64_t block = ggml_type_traits(type).block_elements;
        if (n < 0 || n % block != 0) {
            throw InvalidArgument(std::string(operation) + ": " + std::to_string(n) + " elements is not a multiple of " +
                                  describe_type(type) + "'s block size " + std::to_string(block));
        }
        return format;
    }
    throw_unsupported(operation, type, with_encodings);
}

int64_t blocks_of(GgmlType type, int64_t n) { return n / ggml_type_traits(type).block_elements; }

}  // namespace

void dequantize_row(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
    const auto& format = format_for("dequantize_row", type, n, true);
    format.dequantize(src, dst, blocks_of(type, n));
}

void quantize_row(GgmlType type, const float* src, uint8_t* dst, int64_t n) {
    const auto& format = format_for("quantize_row", type, n, true);
    format.quantize(src, dst, blocks_of(type, n));
}

void quantize_row_reference(GgmlType type, const float* src, uint8_t* dst, int64_t n) {
    const auto& format = format_for("quantize_row_reference", type, n, true);
    format.quantize_reference(src, dst, blocks_of(type, n));
}

GgmlType vec_dot_type(GgmlType weight_type) {
    for (const auto& format : kFormats) {
        if (format.type == weight_type && format.dot != nullptr) return format.dot_type;
    }
    throw_unsupported("vec_dot_type", weight_type, false);
}

float vec_dot(GgmlType weight_type, int64_t n, const uint8_t* weight_row, const uint8_t* activation_row) {
    const auto& format = format_for("vec_dot", weight_type, n, false);
    if (format.dot == nullptr) throw_unsupported("vec_dot", weight_type, false);
    return format.dot(blocks_of(weight_type, n), weight_row, activation_row);
}

}  // namespace inferscope
