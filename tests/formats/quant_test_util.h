#pragma once
// Helpers for the format tests: portable seeded inputs (the same floats on every platform,
// so golden hashes stay valid), row buffers and small byte-level builders.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/formats/ggml_type.h"

namespace inferscope::testing {

// Input shapes for round trips and dot products.
enum class Dist {
    Gaussian,    // ~N(0, 1) (Irwin-Hall: sum of 4 uniforms, scaled)
    Uniform,     // U(-0.02, 0.02)
    Outliers,    // N(0, 0.05) plus a 40 every 97 elements
    Positive,    // |N(0,1)| + 0.5
    ZeroBlocks,  // every third 32-element block all zero, the rest N(0, 1e-3)
    Discrete,    // multiples of 0.5 in [-4, 4]: many exact ties
    HalfTies,    // per 32 elements: one +-127, the rest k + 0.5 -- Q8 multiplier 1, all ties
};
inline constexpr Dist kAllDists[] = {Dist::Gaussian,   Dist::Uniform,  Dist::Outliers, Dist::Positive,
                                     Dist::ZeroBlocks, Dist::Discrete, Dist::HalfTies};

// A uniform float in [0, 1) from the top 24 bits of one mt19937 draw (exact, portable;
// std::*_distribution results are implementation-defined).
inline float unit_float(std::mt19937& rng) { return static_cast<float>(rng() >> 8) * 0x1.0p-24f; }

inline float gaussian_like(std::mt19937& rng) {
    float s = 0.0f;
    for (int k = 0; k < 4; ++k) s += unit_float(rng);
    return (s - 2.0f) * 1.7320508f;  // variance of the sum of 4 U(0,1) is 1/3
}

inline std::vector<float> make_row(Dist dist, int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        float v = 0.0f;
        switch (dist) {
            case Dist::Gaussian: v = gaussian_like(rng); break;
            case Dist::Uniform: v = (unit_float(rng) * 2.0f - 1.0f) * 0.02f; break;
            case Dist::Outliers: v = gaussian_like(rng) * 0.05f + (i % 97 == 3 ? 40.0f : 0.0f); break;
            case Dist::Positive: v = std::fabs(gaussian_like(rng)) + 0.5f; break;
            case Dist::ZeroBlocks: v = (i / 32) % 3 == 0 ? 0.0f : gaussian_like(rng) * 1e-3f; break;
            case Dist::Discrete: v = static_cast<float>(static_cast<int>(rng() % 17) - 8) * 0.5f; break;
            case Dist::HalfTies:
                v = i % 32 == 5 ? (rng() % 2 ? 127.0f : -127.0f)
                                : static_cast<float>(static_cast<int>(rng() % 253) - 126) + 0.5f;
                break;
        }
        x[static_cast<size_t>(i)] = v;
    }
    return x;
}

inline std::vector<uint8_t> row_buffer(GgmlType type, int64_t n) {
    return std::vector<uint8_t>(ggml_row_bytes(type, static_cast<uint64_t>(n)));
}

// FNV-1a over bytes, for golden checks of whole encoded rows.
inline uint64_t fnv1a(const void* data, size_t size) {
    uint64_t h = 0xcbf29ce484222325ull;
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

inline void put_u16(std::vector<uint8_t>& bytes, size_t offset, uint16_t value) {
    bytes[offset] = static_cast<uint8_t>(value & 0xFF);
    bytes[offset + 1] = static_cast<uint8_t>(value >> 8);
}

inline uint16_t get_u16(const uint8_t* bytes) { return static_cast<uint16_t>(bytes[0] | (bytes[1] << 8)); }

}  // namespace inferscope::testing
