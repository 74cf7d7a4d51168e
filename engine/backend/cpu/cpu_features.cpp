#include "engine/backend/cpu/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace inferscope {
namespace {

CpuFeatures detect() {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.f16c = __builtin_cpu_supports("f16c");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512vnni = __builtin_cpu_supports("avx512vnni");
    f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
    f.avxvnni = __builtin_cpu_supports("avxvnni");
#endif
    return f;
}

CpuIsa best_supported() {
    if (cpu_supports(CpuIsa::Avx512)) return CpuIsa::Avx512;
    if (cpu_supports(CpuIsa::Avx2)) return CpuIsa::Avx2;
    return CpuIsa::Scalar;
}

CpuIsa choose() {
    const CpuIsa best = best_supported();
    const char* requested = std::getenv("INFERSCOPE_CPU_ISA");
    if (requested == nullptr || *requested == '\0') return best;
    const std::string name(requested);
    CpuIsa wanted = best;
    if (name == "scalar") {
        wanted = CpuIsa::Scalar;
    } else if (name == "avx2") {
        wanted = CpuIsa::Avx2;
    } else if (name == "avx512") {
        wanted = CpuIsa::Avx512;
    } else {
        std::fprintf(stderr, "warning: INFERSCOPE_CPU_ISA=%s is not one of scalar, avx2, avx512; using %s\n", requested,
                     cpu_isa_name(best).data());
        return best;
    }
    while (!cpu_supports(wanted)) wanted = static_cast<CpuIsa>(static_cast<int>(wanted) - 1);
    if (std::string_view(cpu_isa_name(wanted)) != name) {
        std::fprintf(stderr, "warning: this CPU cannot run %s kernels; using %s\n", requested, cpu_isa_name(wanted).data());
    }
    return wanted;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

bool cpu_supports(CpuIsa isa) {
    const CpuFeatures& f = cpu_features();
    switch (isa) {
        case CpuIsa::Scalar: return true;
        case CpuIsa::Avx2: return f.avx2 && f.fma && f.f16c;
        case CpuIsa::Avx512: return f.avx512f && f.avx512bw && f.avx512vl && f.avx2 && f.fma && f.f16c;
    }
    return false;
}

CpuIsa active_cpu_isa() {
    static const CpuIsa isa = choose();
    return isa;
}

std::string_view cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Scalar: return "scalar";
        case CpuIsa::Avx2: return "avx2";
        case CpuIsa::Avx512: return "avx512";
    }
    return "unknown";
}

}  // namespace inferscope
