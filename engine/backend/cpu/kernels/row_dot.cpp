#include "engine/backend/cpu/kernels/row_dot.h"

#include "engine/formats/quant.h"

namespace inferscope {
namespace {

template <GgmlType Type>
float reference_dot(int64_t n, const uint8_t* weight_row, const uint8_t* activation_row) {
    return vec_dot(Type, n, weight_row, activation_row);
}

template <GgmlType Type>
void reference_dot_rows(int64_t n, const uint8_t* weights, uint64_t weight_row_bytes, int64_t n_rows,
                        const uint8_t* activation_row, float* out) {
    for (int64_t r = 0; r < n_rows; ++r) {
        out[r] = vec_dot(Type, n, weights + static_cast<uint64_t>(r) * weight_row_bytes, activation_row);
    }
}

template <GgmlType Type>
void reference_encode(const float* x, uint8_t* dst, int64_t n) {
    quantize_row(Type, x, dst, n);
}

// The scalar reference as plain function pointers (one instantiation per type).
RowDotKernels scalar_kernels(GgmlType weight_type) {
    RowDotKernels k;
    k.activation_type = vec_dot_type(weight_type);
    switch (weight_type) {
#define INFERSCOPE_REFERENCE(T) \
    case GgmlType::T:                                  \
        k.dot = &reference_dot<GgmlType::T>;           \
        k.dot_rows = &reference_dot_rows<GgmlType::T>; \
        break;
        INFERSCOPE_REFERENCE(F32)
        INFERSCOPE_REFERENCE(F16)
        INFERSCOPE_REFERENCE(BF16)
        INFERSCOPE_REFERENCE(Q4_0)
        INFERSCOPE_REFERENCE(Q4_1)
        INFERSCOPE_REFERENCE(Q5_0)
        INFERSCOPE_REFERENCE(Q5_1)
        INFERSCOPE_REFERENCE(Q8_0)
        INFERSCOPE_REFERENCE(Q2_K)
        INFERSCOPE_REFERENCE(Q3_K)
        INFERSCOPE_REFERENCE(Q4_K)
        INFERSCOPE_REFERENCE(Q5_K)
        INFERSCOPE_REFERENCE(Q6_K)
        INFERSCOPE_REFERENCE(IQ4_NL)
        INFERSCOPE_REFERENCE(IQ4_XS)
#undef INFERSCOPE_REFERENCE
        default: break;
    }
    switch (k.activation_type) {
        case GgmlType::F32: k.encode = &reference_encode<GgmlType::F32>; break;
        case GgmlType::F16: k.encode = &reference_encode<GgmlType::F16>; break;
        case GgmlType::BF16: k.encode = &reference_encode<GgmlType::BF16>; break;
        case GgmlType::Q8_0: k.encode = &reference_encode<GgmlType::Q8_0>; break;
        case GgmlType::Q8_1: k.encode = &reference_encode<GgmlType::Q8_1>; break;
        case GgmlType::Q8_K: k.encode = &reference_encode<GgmlType::Q8_K>; break;
        default: break;
    }
    return k;
}

void fill_missing(RowDotKernels& k, const RowDotKernels& fallback) {
    // dot_rows goes with dot: a family that provides one provides the other (a multi-row
    // loop over a lower family's dot would not be this family's kernel).
    if (k.dot == nullptr) {
        k.dot = fallback.dot;
        k.dot_rows = fallback.dot_rows;
        k.dot_rows_batch = fallback.dot_rows_batch;  // the batch kernel must match dot_rows' bits
    }
    if (k.dot_rows == nullptr) k.dot_rows = fallback.dot_rows;  // (the tables always provide both)
    if (k.encode == nullptr) k.encode = fallback.encode;
    k.activation_type = fallback.activation_type;
}

}  // namespace

RowDotKernels row_dot_family_kernels(GgmlType weight_type, CpuIsa isa) {
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
        case CpuIsa::Avx2: return simd::avx2_row_dot_kernels(weight_type);
        case CpuIsa::AvxVnni: return simd::avxvnni_row_dot_kernels(weight_type);
        case CpuIsa::Avx512: return simd::avx512_row_dot_kernels(weight_type, active_prefetch_level());
#elif defined(__aarch64__)
        case CpuIsa::Neon: return simd::neon_row_dot_kernels(weight_type);
        case CpuIsa::Dotprod: return simd::dotprod_row_dot_kernels(weight_type, cpu_features().fp16_fml);
        case CpuIsa::I8mm: return simd::i8mm_row_dot_kernels(weight_type);
#endif
        default: return {};
    }
}

RowDotKernels row_dot_kernels(GgmlType weight_type, CpuIsa isa) {
    if (isa == CpuIsa::Scalar) return scalar_kernels(weight_type);  // throws for types without a dot product
    const RowDotKernels below = row_dot_kernels(weight_type, runnable_family_below(isa));
    RowDotKernels own = row_dot_family_kernels(weight_type, isa);
    fill_missing(own, below);
    return own;
}

}  // namespace inferscope
