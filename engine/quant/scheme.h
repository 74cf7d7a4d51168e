#pragma once
// Weight quantization schemes behind one description: symmetric absmax INT-b at tensor,
// row or group granularity, NF4, and the GGUF block formats Q8_0, Q4_0, Q4_K, Q6_K, IQ4_NL
// and IQ4_XS.
//
// Grammar (parse_quant_scheme):
//   int<b>:tensor | int<b>:row | int<b>:g<N>   b = 2..8, N >= 2 consecutive weights of a row
//   nf4 | nf4:<block>                         block >= 2 (default 64)
//   q8_0 | q4_0 | q4_k | q6_k | iq4_nl | iq4_xs  ggml's block formats, llama-quantize's encoders
// INT and NF4 take an optional last field naming how scales are stored: f16 (the default),
// bf16 or f32, e.g. "int4:g128:f32", "nf4:64:bf16". Scales count in bits/weight.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/formats/ggml_type.h"

namespace inferscope {

enum class SchemeFamily { Int, Nf4, Gguf };
enum class Granularity { Tensor, Row, Group };
enum class ScaleFormat { F16, BF16, F32 };

struct QuantScheme {
    SchemeFamily family = SchemeFamily::Int;
    int bits = 8;                                // INT: 2..8; NF4: 4; GGUF: unused
    Granularity granularity = Granularity::Row;  // INT only
    int64_t block = 0;                           // INT groups: N; NF4: its block size
    ScaleFormat scale_format = ScaleFormat::F16; // INT and NF4
    GgmlType gguf_type = GgmlType::F32;          // GGUF only

    // Canonical spelling, accepted back by parse_quant_scheme ("int4:g128", "nf4", "q4_k").
    std::string name() const;

    // The format the engine executes: the packed GGUF type for GGUF schemes; F32 holding the
    // exact dequantized values for INT and NF4 (no kernel runs them packed).
    GgmlType execution_type() const { return family == SchemeFamily::Gguf ? gguf_type : GgmlType::F32; }
    bool executes_packed() const { return family == SchemeFamily::Gguf; }

    // Throws InvalidArgument (group or block not dividing the row) or UnsupportedError (a
    // GGUF format whose block does not divide the row) naming `matrix` and the shape.
    void check_shape(int64_t rows, int64_t cols, const std::string& matrix) const;

    // Storage cost of a rows x cols matrix including its scales (as stored, not as
    // executed). Both assume check_shape passed.
    double bits_per_weight(int64_t rows, int64_t cols) const;
    uint64_t storage_bytes(int64_t rows, int64_t cols) const;
    // Number of scales an INT or NF4 matrix stores (0 for GGUF schemes).
    int64_t scale_count(int64_t rows, int64_t cols) const;
};

// Parses the grammar above; InvalidArgument naming the text and what is wrong.
QuantScheme parse_quant_scheme(std::string_view text);

// Bits of one stored scale.
int scale_format_bits(ScaleFormat format);
// `scale` after a round trip through its storage format (what dequantization multiplies by).
float stored_scale(float scale, ScaleFormat format);

}  // namespace inferscope
