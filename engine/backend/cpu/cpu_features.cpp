#include "engine/backend/cpu/cpu_features.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace inferscope {
namespace {

#if defined(__x86_64__) || defined(__i386__)
bool bit(unsigned value, int index) { return ((value >> index) & 1U) != 0; }

// Which register state the operating system saves on context switch (XCR0). A CPU may offer
// AVX-512 while the OS leaves it disabled, so both must agree before a kernel family is used.
unsigned long long enabled_register_state() {
    unsigned eax = 0, edx = 0;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<unsigned long long>(edx) << 32) | eax;
}
#endif

#if defined(__aarch64__) && defined(__APPLE__)
bool sysctl_flag(const char* name) {
    int value = 0;
    size_t size = sizeof(value);
    return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
}
#endif

#if defined(__aarch64__)
// The ARM64 extensions, from the kernel's hardware capabilities (Linux) or sysctl (macOS).
void detect_arm(CpuFeatures& f) {
    f.neon = true;  // Advanced SIMD is part of every ARMv8-A profile the engine runs on
#if defined(__linux__)
    const unsigned long hwcap = getauxval(AT_HWCAP);
    const unsigned long hwcap2 = getauxval(AT_HWCAP2);
    f.dotprod = (hwcap & HWCAP_ASIMDDP) != 0;
    f.fp16_fml = (hwcap & HWCAP_ASIMDFHM) != 0;
    f.i8mm = (hwcap2 & HWCAP2_I8MM) != 0;
#elif defined(__APPLE__)
    f.dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
    f.fp16_fml = sysctl_flag("hw.optional.arm.FEAT_FHM");
    f.i8mm = sysctl_flag("hw.optional.arm.FEAT_I8MM");
#endif
}
#endif

// Read from CPUID directly: compilers disagree on which names __builtin_cpu_supports accepts
// (clang 14 knows neither "f16c" nor "avxvnni").
CpuFeatures detect() {
    CpuFeatures f;
#if defined(__aarch64__)
    detect_arm(f);
#endif
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(0, 0, &eax, &ebx, &ecx, &edx) == 0) return f;
    f.intel = ebx == 0x756e6547 && edx == 0x49656e69 && ecx == 0x6c65746e;  // "Genu" "ineI" "ntel"
    if (__get_cpuid_count(1, 0, &eax, &ebx, &ecx, &edx) == 0) return f;
    const bool os_saves_ymm = bit(ecx, 27) && (enabled_register_state() & 0x6) == 0x6;  // OSXSAVE; SSE+AVX state
    if (!os_saves_ymm) return f;
    const bool os_saves_zmm = (enabled_register_state() & 0xe6) == 0xe6;  // + opmask, ZMM_Hi256, Hi16_ZMM
    f.fma = bit(ecx, 12);
    f.f16c = bit(ecx, 29);
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return f;
    const unsigned leaf7_ebx = ebx, leaf7_ecx = ecx;
    f.avx2 = bit(leaf7_ebx, 5);
    if (os_saves_zmm) {
        f.avx512f = bit(leaf7_ebx, 16);
        f.avx512bw = bit(leaf7_ebx, 30);
        f.avx512vl = bit(leaf7_ebx, 31);
        f.avx512vnni = bit(leaf7_ecx, 11);
    }
    if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0) {
        f.avxvnni = bit(eax, 4);
        f.avx512bf16 = os_saves_zmm && bit(eax, 5);
    }
#endif
    return f;
}

#if defined(__x86_64__) || defined(__i386__)
constexpr std::array kBuiltFamilies = {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::AvxVnni, CpuIsa::Avx512};
#elif defined(__aarch64__)
constexpr std::array kBuiltFamilies = {CpuIsa::Scalar, CpuIsa::Neon, CpuIsa::Dotprod, CpuIsa::I8mm};
#else
constexpr std::array kBuiltFamilies = {CpuIsa::Scalar};
#endif

CpuIsa best_supported() {
    CpuIsa best = CpuIsa::Scalar;
    for (const CpuIsa isa : kBuiltFamilies) {
        if (cpu_supports(isa)) best = isa;
    }
    return best;
}

std::string built_family_names() {
    std::string names;
    for (const CpuIsa isa : kBuiltFamilies) names += (names.empty() ? "" : ", ") + std::string(cpu_isa_name(isa));
    return names;
}

CpuIsa choose() {
    const CpuIsa best = best_supported();
    const char* requested = std::getenv("INFERSCOPE_CPU_ISA");
    if (requested == nullptr || *requested == '\0') return best;
    const std::string name(requested);
    const CpuIsa* named = nullptr;
    for (const CpuIsa& isa : kBuiltFamilies) {
        if (cpu_isa_name(isa) == name) named = &isa;
    }
    if (named == nullptr) {
        std::fprintf(stderr, "warning: INFERSCOPE_CPU_ISA=%s is not one of %s; using %s\n", requested,
                     built_family_names().c_str(), cpu_isa_name(best).data());
        return best;
    }
    const CpuIsa wanted = cpu_supports(*named) ? *named : runnable_family_below(*named);
    if (std::string_view(cpu_isa_name(wanted)) != name) {
        std::fprintf(stderr, "warning: this CPU cannot run %s kernels; using %s\n", requested, cpu_isa_name(wanted).data());
    }
    return wanted;
}

PrefetchLevel choose_prefetch_level() {
    const PrefetchLevel vendor_default = cpu_features().intel ? PrefetchLevel::L2 : PrefetchLevel::L1;
    const char* requested = std::getenv("INFERSCOPE_PREFETCH");
    if (requested == nullptr || *requested == '\0') return vendor_default;
    const std::string name(requested);
    if (name == "l1") return PrefetchLevel::L1;
    if (name == "l2") return PrefetchLevel::L2;
    std::fprintf(stderr, "warning: INFERSCOPE_PREFETCH=%s is not one of l1, l2; using %s\n", requested,
                 prefetch_level_name(vendor_default).data());
    return vendor_default;
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
        case CpuIsa::AvxVnni: return f.avx2 && f.fma && f.f16c && f.avxvnni;
        case CpuIsa::Avx512: return f.avx512f && f.avx512bw && f.avx512vl && f.avx2 && f.fma && f.f16c;
        case CpuIsa::Neon: return f.neon;
        case CpuIsa::Dotprod: return f.neon && f.dotprod;
        case CpuIsa::I8mm: return f.neon && f.dotprod && f.i8mm;
    }
    return false;
}

CpuIsa family_below(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Scalar: return CpuIsa::Scalar;
        case CpuIsa::Avx2: return CpuIsa::Scalar;
        case CpuIsa::AvxVnni: return CpuIsa::Avx2;
        case CpuIsa::Avx512: return CpuIsa::AvxVnni;
        case CpuIsa::Neon: return CpuIsa::Scalar;
        case CpuIsa::Dotprod: return CpuIsa::Neon;
        case CpuIsa::I8mm: return CpuIsa::Dotprod;
    }
    return CpuIsa::Scalar;
}

CpuIsa runnable_family_below(CpuIsa isa) {
    CpuIsa below = family_below(isa);
    while (!cpu_supports(below)) below = family_below(below);
    return below;
}

std::span<const CpuIsa> built_cpu_families() { return kBuiltFamilies; }

CpuIsa active_cpu_isa() {
    static const CpuIsa isa = choose();
    return isa;
}

std::string_view cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Scalar: return "scalar";
        case CpuIsa::Avx2: return "avx2";
        case CpuIsa::AvxVnni: return "avxvnni";
        case CpuIsa::Avx512: return "avx512";
        case CpuIsa::Neon: return "neon";
        case CpuIsa::Dotprod: return "dotprod";
        case CpuIsa::I8mm: return "i8mm";
    }
    return "unknown";
}

PrefetchLevel active_prefetch_level() {
    static const PrefetchLevel level = choose_prefetch_level();
    return level;
}

std::string_view prefetch_level_name(PrefetchLevel level) { return level == PrefetchLevel::L2 ? "l2" : "l1"; }

}  // namespace inferscope
