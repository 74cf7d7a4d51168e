#include "engine/backend/cpu/kernels/activation_kernels.h"

#include "engine/backend/cpu/ops.h"

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

// Every family against the scalar rms_norm_row: bit-identical on rows of one magnitude (the
// double sum of float squares is exact in any order), within a float's rounding on rows that
// span 1e-20..1e15, over lengths with every tail; no element past n is written.
TEST_P(ActivationKernelsTest, RmsNormMatchesTheScalarRow) {
    const CpuIsa isa = GetParam();
    if (!cpu_supports(isa)) GTEST_SKIP() << "this CPU cannot run " << cpu_isa_name(isa) << " kernels";
    const ActivationKernels k = activation_kernels(isa);
    std::mt19937 rng(12);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> exponent(-20.0f, 15.0f);
    for (bool wide : {false, true}) {
        for (int64_t n : {1, 15, 16, 17, 100, 896, 4096}) {
            for (float magnitude : {1e-3f, 1.0f, 30.0f}) {
                std::vector<float> x(static_cast<size_t>(n)), weight(static_cast<size_t>(n));
                for (auto& v : x) v = normal(rng) * (wide ? std::pow(10.0f, exponent(rng)) : magnitude);
                for (auto& w : weight) w = 1.0f + 0.1f * normal(rng);
                std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, 12345.0f);
                rms_norm_row(x.data(), weight.data(), n, 1e-6f, want.data());
                k.rms_norm(x.data(), weight.data(), n, 1e-6f, got.data());
                for (int64_t i = 0; i < n; ++i) {
                    const float w = want[static_cast<size_t>(i)], g = got[static_cast<size_t>(i)];
                    if (wide) {
                        EXPECT_NEAR(g, w, 2e-7f * std::abs(w)) << "n " << n << " i " << i;
                    } else {
                        EXPECT_EQ(g, w) << "n " << n << " i " << i << " magnitude " << magnitude;
                    }
                }
                EXPECT_EQ(got[static_cast<size_t>(n)], 12345.0f) << "wrote past n = " << n;
            }
        }
    }
}

// Every SIMD family runs vector SwiGLU and RMS norm of its own or its base family's (AVX2,
// NEON); GeGLU stays on the scalar table everywhere.
TEST(ActivationKernels, SimdFamiliesDoNotFallBackToScalar) {
    const ActivationKernels scalar = activation_kernels(CpuIsa::Scalar);
    for (const CpuIsa isa : built_cpu_families()) {
        if (isa == CpuIsa::Scalar || !cpu_supports(isa)) continue;
        const ActivationKernels tested = activation_kernels(isa);
        EXPECT_NE(tested.swiglu, scalar.swiglu) << cpu_isa_name(isa);
        EXPECT_NE(tested.rms_norm, scalar.rms_norm) << cpu_isa_name(isa);
    }
}

// exp_avx2.h builds 2^n in the exponent field where exp_avx512.h uses vscalefps; both say
// they give the same results. SwiGLU over every float the clamp treats differently (below
// -87.3, between, above 88.7) and a dense sweep must then agree to the bit.
TEST(ActivationKernels, Avx2AndAvx512SwigluAgreeBitForBit) {
    if (!cpu_supports(CpuIsa::Avx512)) GTEST_SKIP() << "this CPU cannot run avx512 kernels";
    std::vector<float> gate, up;
    for (float g = -100.0f; g <= 100.0f; g += 0.01953125f) gate.push_back(g);
    for (float g : {-87.31f, -87.3f, -87.29f, 88.69f, 88.7f, 88.71f, 0.0f, -0.0f, 1e-30f, -1e-30f}) gate.push_back(g);
    for (size_t i = 0; i < gate.size(); ++i) up.push_back(0.5f + static_cast<float>(i % 7));
    std::vector<float> avx2 = gate, avx512 = gate;
    activation_kernels(CpuIsa::Avx2).swiglu(avx2.data(), up.data(), static_cast<int64_t>(gate.size()));
    activation_kernels(CpuIsa::Avx512).swiglu(avx512.data(), up.data(), static_cast<int64_t>(gate.size()));
    for (size_t i = 0; i < gate.size(); ++i) EXPECT_EQ(avx2[i], avx512[i]) << "g = " << gate[i];
}

INSTANTIATE_TEST_SUITE_P(Families, ActivationKernelsTest, ::testing::ValuesIn(built_cpu_families()),
                         [](const ::testing::TestParamInfo<CpuIsa>& info) { return std::string(cpu_isa_name(info.param)); });

}  // namespace
}  // namespace inferscope
