#pragma once
// ggml's scalar *reference* quantizers, for writing weight files.
//
// quantize_row() (quant.h) encodes Q8_0 and Q8_1 the way llama.cpp's x86 CPU backend
// encodes ACTIVATIONS before a dot product (multiplier 127/amax, round half to even),
// because that is what our dot products must reproduce. llama-quantize, however, writes
// Q8_0 weights with quantize_row_q8_0_ref (multiplier 1/(amax/127), roundf: half away
// from zero). The two agree except where x*id lands exactly on .5 or the multipliers
// differ by an ulp. Use this function to produce weight tensors byte-identical to
// llama-quantize (without an imatrix); for every other type it is identical to
// quantize_row().
#include <cstdint>

#include "engine/formats/ggml_type.h"

namespace inferscope {

void quantize_row_reference(GgmlType type, const float* src, uint8_t* dst, int64_t n);

}  // namespace inferscope
