#pragma once
// Which instruction sets this CPU offers, and which kernel family the engine uses. The
// choice is made once per process: the best family the CPU supports, or the one named by
// the environment variable INFERSCOPE_CPU_ISA (scalar, avx2, avx512) for testing; a request
// the CPU cannot run falls back to the best supported family below it.
#include <string_view>

namespace inferscope {

enum class CpuIsa {
    Scalar,  // portable C++: the reference every other path is tested against
    Avx2,    // AVX2 + FMA + F16C
    Avx512,  // AVX-512 F/BW/VL (+ VNNI, BF16 where present)
};

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512vnni = false;
    bool avx512bf16 = false;
    bool avxvnni = false;
};

const CpuFeatures& cpu_features();
bool cpu_supports(CpuIsa isa);
// The family in use (decided on first call).
CpuIsa active_cpu_isa();
std::string_view cpu_isa_name(CpuIsa isa);  // "scalar", "avx2", "avx512"

}  // namespace inferscope
