#include "engine/backend/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <span>
#include <sstream>
#include <string>

namespace inferscope {
namespace {

// The kernel's own view of the CPU: the "flags" line of /proc/cpuinfo (Linux only). The
// kernel lists a flag only when the OS also enables its register state, as detect() requires.
std::set<std::string> proc_cpuinfo_flags() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        std::istringstream words(line.substr(line.find(':') + 1));
        std::set<std::string> flags;
        for (std::string w; words >> w;) flags.insert(w);
        return flags;
    }
    return {};
}

TEST(CpuFeatures, AgreeWithTheKernelsFlagsInProcCpuinfo) {
#if !(defined(__x86_64__) || defined(__i386__))
    GTEST_SKIP() << "not an x86 CPU: the ARM64 features come from the kernel's hardware capabilities";
#endif
    const std::set<std::string> flags = proc_cpuinfo_flags();
    if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line on this system";
    const CpuFeatures& f = cpu_features();
    EXPECT_EQ(f.avx2, flags.count("avx2") == 1);
    EXPECT_EQ(f.fma, flags.count("fma") == 1);
    EXPECT_EQ(f.f16c, flags.count("f16c") == 1);
    EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
    EXPECT_EQ(f.avx512bw, flags.count("avx512bw") == 1);
    EXPECT_EQ(f.avx512vl, flags.count("avx512vl") == 1);
    EXPECT_EQ(f.avx512vnni, flags.count("avx512_vnni") == 1);
    EXPECT_EQ(f.avx512bf16, flags.count("avx512_bf16") == 1);
    EXPECT_EQ(f.avxvnni, flags.count("avx_vnni") == 1);
}

TEST(CpuFeatures, ActiveFamilyIsOneTheCpuSupports) {
    EXPECT_TRUE(cpu_supports(active_cpu_isa()));
    EXPECT_TRUE(cpu_supports(CpuIsa::Scalar));
}

// The families of this build, lowest first, each on the one before it; every ARM64 core
// has NEON, and each extension level needs the ones below it. A family's missing kernels
// come from the first family below it that the CPU runs (AVX-512 without AVX-VNNI exists).
TEST(CpuFeatures, BuiltFamiliesFormOneChainFromScalar) {
    const std::span<const CpuIsa> families = built_cpu_families();
    ASSERT_FALSE(families.empty());
    EXPECT_EQ(families.front(), CpuIsa::Scalar);
    EXPECT_EQ(family_below(CpuIsa::Scalar), CpuIsa::Scalar);
    std::set<std::string_view> names;
    for (size_t i = 0; i < families.size(); ++i) {
        names.insert(cpu_isa_name(families[i]));
        if (i > 0) {
            EXPECT_EQ(family_below(families[i]), families[i - 1]) << cpu_isa_name(families[i]);
        }
        CpuIsa runnable = family_below(families[i]);
        while (!cpu_supports(runnable)) runnable = family_below(runnable);
        EXPECT_EQ(runnable_family_below(families[i]), runnable) << cpu_isa_name(families[i]);
        if (families[i] != CpuIsa::Avx512 && cpu_supports(families[i])) {
            EXPECT_TRUE(cpu_supports(family_below(families[i]))) << cpu_isa_name(families[i]);
        }
    }
    EXPECT_EQ(names.size(), families.size());
#if defined(__aarch64__)
    EXPECT_TRUE(cpu_features().neon);
    EXPECT_TRUE(cpu_supports(CpuIsa::Neon));
#endif
}

// INFERSCOPE_CPU_ISA names a family of this build; the active one is it (or, when the CPU
// cannot run it, the best one below it), else the best the CPU supports.
TEST(CpuFeatures, ActiveFamilyFollowsTheEnvironment) {
    const char* requested = std::getenv("INFERSCOPE_CPU_ISA");
    const std::string name = requested == nullptr ? "" : requested;
    CpuIsa best = CpuIsa::Scalar;
    for (const CpuIsa isa : built_cpu_families()) {
        if (cpu_supports(isa)) best = isa;
    }
    for (const CpuIsa isa : built_cpu_families()) {
        if (cpu_isa_name(isa) != name) continue;
        CpuIsa expected = isa;
        while (!cpu_supports(expected)) expected = family_below(expected);
        EXPECT_EQ(active_cpu_isa(), expected);
        return;
    }
    EXPECT_EQ(active_cpu_isa(), best) << "INFERSCOPE_CPU_ISA=" << name;
}

// The vendor from CPUID leaf 0 against the kernel's "vendor_id" line.
TEST(CpuFeatures, VendorAgreesWithProcCpuinfo) {
#if !(defined(__x86_64__) || defined(__i386__))
    GTEST_SKIP() << "not an x86 CPU: the vendor comes from x86's CPUID";
#endif
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    bool found = false;
    while (!found && std::getline(in, line)) found = line.rfind("vendor_id", 0) == 0;
    if (!found) GTEST_SKIP() << "/proc/cpuinfo has no vendor_id line on this system";
    EXPECT_EQ(cpu_features().intel, line.find("GenuineIntel") != std::string::npos) << line;
}

// Without INFERSCOPE_PREFETCH the level follows the vendor; with it, the named level.
TEST(CpuFeatures, PrefetchLevelFollowsVendorOrEnvironment) {
    EXPECT_EQ(prefetch_level_name(PrefetchLevel::L1), "l1");
    EXPECT_EQ(prefetch_level_name(PrefetchLevel::L2), "l2");
    const char* requested = std::getenv("INFERSCOPE_PREFETCH");
    const std::string name = requested == nullptr ? "" : requested;
    if (name == "l1" || name == "l2") {
        EXPECT_EQ(prefetch_level_name(active_prefetch_level()), name);
    } else {
        EXPECT_EQ(active_prefetch_level(), cpu_features().intel ? PrefetchLevel::L2 : PrefetchLevel::L1);
    }
}

}  // namespace
}  // namespace inferscope
