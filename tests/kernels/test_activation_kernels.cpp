#include "engine/backend/cpu/kernels/activation_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace inferscope {
namespace {

class ActivationKernelsTest : public ::testing::TestWithParam<CpuIsa> {};

// Every family against silu(g) * up in double, over ordinary values, the extremes where e^-g
// overflows or underflows, and lengths with every tail; no element past n is written.
TEST_P(ActivationKernelsTest, SwigluMatchesDoublePrecision) {
    const CpuIsa isa = GetParam();
    if (!cpu_supports(isa)) GTEST_SKIP() << "this CPU cannot run " << cpu_isa_name(isa) << " kernels";
    const ActivationKernels k = activation_kernels(isa);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    for (int64_t n : {1, 15, 16, 17, 100, 4864}) {
        std::vector<float> gate(static_cast<size_t>(n) + 1), up(static_cast<size_t>(n));
        for (auto& g : gate) g = normal(rng);
        for (auto& u : up) u = normal(rng);
        if (n >= 6) {
            gate[0] = 0.0f;
            gate[1] = 95.0f;    // e^-g underflows
            gate[2] = -95.0f;   // e^-g overflows
            gate[3] = 88.0f;
            gate[4] = -88.0f;
            gate[5] = 1e-30f;
        }
        gate[static_cast<size_t>(n)] = 12345.0f;  // guard
        std::vector<float> got(gate);
        k.swiglu(got.data(), up.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const double g = gate[static_cast<size_t>(i)];
            const double want = g / (1.0 + std::exp(-g)) * up[static_cast<size_t>(i)];
            const double got_i = got[static_cast<size_t>(i)];
            ASSERT_TRUE(std::isfinite(got_i)) << "g = " << g;
            EXPECT_NEAR(got_i, want, 1e-6 * std::abs(want) + 1e-30) << "n " << n << " i " << i << " g = " << g;
        }
        EXPECT_EQ(got[static_cast<size_t>(n)], 12345.0f) << "wrote past n = " << n;
    }
}

INSTANTIATE_TEST_SUITE_P(Families, ActivationKernelsTest, ::testing::Values(CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512),
                         [](const ::testing::TestParamInfo<CpuIsa>& info) { return std::string(cpu_isa_name(info.param)); });

}  // namespace
}  // namespace inferscope
