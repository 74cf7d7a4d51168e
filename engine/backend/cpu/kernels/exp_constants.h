#pragma once
// The constants of e^x in exp_avx2.h and exp_avx512.h, defined once because both families must
// give the same results: x = n ln2 + r (ln2 split in two so that n * kLn2High is exact), e^r by
// a degree-6 polynomial, times 2^n; inputs are clamped to [kExpLow, kExpHigh].
namespace inferscope::simd {
namespace {

constexpr float kExpLow = -87.3f;
constexpr float kExpHigh = 88.7f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693145751953125f;
constexpr float kLn2Low = 1.428606765330187e-06f;
// Horner's coefficients, highest degree first: 1/6!, 1/5!, ..., 1/1!, 1/0!.
constexpr int kExpTerms = 7;
constexpr float kExpPolynomial[kExpTerms] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};

}  // namespace
}  // namespace inferscope::simd
