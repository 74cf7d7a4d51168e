// IQ4_NL / IQ4_XS through matmul: decode (one row) and prefill (several rows: batch kernels,
// tiled kernels where the family has them, row dot products otherwise) give every output
// the row dot product of the scalar reference, up to float summation order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/backend/cpu/matmul.h"
#include "engine/core/thread_pool.h"
#include "engine/formats/quant.h"
#include "formats/quant_test_util.h"

namespace inferscope {
namespace {

using testing::Dist;
using testing::make_row;

TEST(MatmulIQ4, EveryBatchSizeMatchesTheReferenceDotProducts) {
    ThreadPool pool(2);
    for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
        const int64_t rows = 37, cols = 768;
        const uint64_t row_bytes = ggml_row_bytes(type, cols);
        std::vector<uint8_t> weights(row_bytes * rows);
        std::vector<std::vector<float>> decoded(rows, std::vector<float>(cols));
        for (int64_t r = 0; r < rows; ++r) {
            const auto values = make_row(r % 3 == 0 ? Dist::Outliers : Dist::Gaussian, cols, 100 + static_cast<uint32_t>(r));
            quantize_row(type, values.data(), weights.data() + r * row_bytes, cols);
            dequantize_row(type, weights.data() + r * row_bytes, decoded[r].data(), cols);
        }
        const WeightMatrix w{"w", type, rows, cols, row_bytes, weights.data()};
        const GgmlType act = vec_dot_type(type);
        for (int64_t n : {1, 2, 3, 4, 5, 8, 9, 16, 33}) {
            std::vector<float> x(static_cast<size_t>(n * cols));
            for (int64_t i = 0; i < n; ++i) {
                const auto row = make_row(Dist::Gaussian, cols, 500 + static_cast<uint32_t>(i));
                std::copy(row.begin(), row.end(), x.begin() + i * cols);
            }
            std::vector<float> y(static_cast<size_t>(n * rows), NAN);
            MatmulScratch scratch;
            matmul(w, x.data(), n, y.data(), pool, scratch);
            for (int64_t i = 0; i < n; ++i) {
                std::vector<uint8_t> xq(ggml_row_bytes(act, cols));
                quantize_row(act, x.data() + i * cols, xq.data(), cols);
                std::vector<float> xv(cols);
                dequantize_row(act, xq.data(), xv.data(), cols);
                for (int64_t r = 0; r < rows; ++r) {
                    const float want = vec_dot(type, cols, weights.data() + r * row_bytes, xq.data());
                    double s = 0;
                    for (int64_t k = 0; k < cols; ++k) s += std::fabs(static_cast<double>(decoded[r][k]) * xv[k]);
                    ASSERT_NEAR(y[i * rows + r], want, 64 * 0x1.0p-24 * s + 1e-30)
                        << ggml_type_name(type) << " n=" << n << " input " << i << " row " << r;
                }
            }
        }
    }
}

}  // namespace
}  // namespace inferscope
