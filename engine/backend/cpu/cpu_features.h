#pragma once
// Which instruction sets this CPU offers, and which kernel family the engine uses. The
// choice is made once per process: the best family the CPU supports, or the one named by
// the environment variable INFERSCOPE_CPU_ISA (scalar, avx2, avxvnni, avx512 on x86-64;
// scalar, neon, dotprod, i8mm on ARM64) for testing; a request the CPU cannot run falls back
// to the best supported family below it.
#include <span>
#include <string_view>

namespace inferscope {

// Each family builds on the one below it (family_below), down to Scalar.
enum class CpuIsa {
    Scalar,   // portable C++: the reference every other path is tested against
    Avx2,     // x86-64: AVX2 + FMA + F16C
    AvxVnni,  // x86-64: + AVX-VNNI (vpdpbusd on YMM registers: Alder Lake and later, Zen 5)
    Avx512,   // x86-64: AVX-512 F/BW/VL (+ VNNI, BF16 where present)
    Neon,     // ARM64: Advanced SIMD (every ARMv8-A core)
    Dotprod,  // ARM64: + the 8-bit dot product (sdot, ARMv8.2)
    I8mm,     // ARM64: + the 8-bit matrix multiply (smmla, ARMv8.6)
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
    bool intel = false;  // vendor "GenuineIntel"
    bool neon = false;
    bool dotprod = false;
    bool i8mm = false;
    bool fp16_fml = false;  // ARM64 FEAT_FHM: half-precision multiply-accumulate into single precision (FMLAL)
};

const CpuFeatures& cpu_features();
bool cpu_supports(CpuIsa isa);
// The family in use (decided on first call).
CpuIsa active_cpu_isa();
std::string_view cpu_isa_name(CpuIsa isa);  // "scalar", "avx2", "avxvnni", "avx512", "neon", "dotprod", "i8mm"
// The family below `isa` in the chain (Scalar for Scalar itself).
CpuIsa family_below(CpuIsa isa);
// The family a family's missing kernels come from: the first one below it that this CPU can
// run (a CPU may have AVX-512 without AVX-VNNI, as Zen 4 and Ice Lake do).
CpuIsa runnable_family_below(CpuIsa isa);
// The families this build has kernels for, lowest first: Scalar, then this architecture's.
std::span<const CpuIsa> built_cpu_families();

// Where the AVX-512 4-bit row kernels (Q4_0, Q4_1, IQ4_NL, IQ4_XS) request the weights they
// will read next: into L1 (prefetcht0) or into L2 only (prefetcht1). Chosen once per process:
// L2 on Intel cores, where it makes 4-bit decode faster, L1 elsewhere (AMD Zen, the cores
// those kernels are tuned for); the environment variable INFERSCOPE_PREFETCH (l1, l2)
// overrides it for comparisons. The other kernels keep L1: L2 makes Q8_0 slower and does not
// help F16.
enum class PrefetchLevel { L1, L2 };
PrefetchLevel active_prefetch_level();
std::string_view prefetch_level_name(PrefetchLevel level);  // "l1", "l2"

}  // namespace inferscope
