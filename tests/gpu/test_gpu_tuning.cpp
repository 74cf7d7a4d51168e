// The kernel tuning table (gpu/vk_tuning.h): which entry a device gets, the attention target
// from its compute units, the INFERSCOPE_VK_TUNING and INFERSCOPE_VK_INTEGER_DOT overrides, and shapes every kernel accepts
// (no device needed), and that a bad tuning name fails a GPU test instead of skipping it.
// test_gpu_matvec runs every entry's products against the CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <set>

#include "engine/core/error.h"
#include "gpu/op_harness.h"
#include "gpu/vk_kernels.h"
#include "gpu/vk_tuning.h"
#include "gpu_test_util.h"

namespace inferscope {
namespace {

gpu::DeviceInfo device(uint32_t vendor_id, const std::string& type, uint32_t compute_units = 0) {
    gpu::DeviceInfo info;
    info.vendor_id = vendor_id;
    info.type = type;
    info.compute_units = compute_units;
    return info;
}

// Clears the tuning variables for the test and restores the process's values after it.
class KernelTuningTest : public ::testing::Test {
protected:
    static constexpr const char* kVariables[] = {"INFERSCOPE_VK_TUNING", "INFERSCOPE_VK_INTEGER_DOT"};
    void SetUp() override {
        for (size_t i = 0; i < std::size(kVariables); ++i) {
            if (const char* v = std::getenv(kVariables[i])) saved_[i] = v;
            unsetenv(kVariables[i]);
        }
    }
    void TearDown() override {
        for (size_t i = 0; i < std::size(kVariables); ++i) {
            if (saved_[i].has_value()) {
                setenv(kVariables[i], saved_[i]->c_str(), 1);
            } else {
                unsetenv(kVariables[i]);
            }
        }
    }
    std::optional<std::string> saved_[std::size(kVariables)];
};

TEST_F(KernelTuningTest, EachVendorGetsItsOwnEntryAndACpuDriverItsOwn) {
    EXPECT_EQ(gpu::kernel_tuning(device(gpu::kVendorNvidia, "discrete")).name, "nvidia");
    EXPECT_EQ(gpu::kernel_tuning(device(gpu::kVendorAmd, "integrated")).name, "amd");
    EXPECT_EQ(gpu::kernel_tuning(device(gpu::kVendorIntel, "integrated")).name, "intel");
    EXPECT_EQ(gpu::kernel_tuning(device(gpu::kVendorArm, "integrated")).name, "arm");
    EXPECT_EQ(gpu::kernel_tuning(device(gpu::kVendorQualcomm, "integrated")).name, "qualcomm");
    EXPECT_EQ(gpu::kernel_tuning(device(gpu::kVendorApple, "integrated")).name, "apple");
    EXPECT_EQ(gpu::kernel_tuning(device(0x1234, "discrete")).name, "default");
    // lavapipe reports Mesa's vendor id, SwiftShader Google's: the device type decides.
    EXPECT_EQ(gpu::kernel_tuning(device(0x10005, "cpu")).name, "cpu-driver");
    EXPECT_EQ(gpu::kernel_tuning(device(gpu::kVendorNvidia, "cpu")).name, "cpu-driver");
}

TEST_F(KernelTuningTest, AttentionTargetFollowsTheReportedComputeUnits) {
    const gpu::KernelTuning unknown = gpu::kernel_tuning(device(gpu::kVendorNvidia, "discrete"));
    EXPECT_EQ(unknown.attention_workgroups, gpu::kernel_tuning_named("nvidia").attention_workgroups);
    // An H100/H200's 132 streaming multiprocessors, a laptop Radeon's 12 compute units.
    const gpu::KernelTuning h200 = gpu::kernel_tuning(device(gpu::kVendorNvidia, "discrete", 132));
    EXPECT_EQ(h200.attention_workgroups, 132u * h200.attention_workgroups_per_unit);
    const gpu::KernelTuning radeon = gpu::kernel_tuning(device(gpu::kVendorAmd, "integrated", 12));
    EXPECT_EQ(radeon.attention_workgroups, 12u * radeon.attention_workgroups_per_unit);
    EXPECT_LT(radeon.attention_workgroups, h200.attention_workgroups);
}

TEST_F(KernelTuningTest, TheEnvironmentChoosesAnEntryAndAnUnknownNameIsRefusedListingTheKnownOnes) {
    setenv("INFERSCOPE_VK_TUNING", "intel", 1);
    EXPECT_EQ(gpu::kernel_tuning(device(gpu::kVendorNvidia, "discrete")).name, "intel");
    setenv("INFERSCOPE_VK_TUNING", "fastest", 1);
    try {
        gpu::kernel_tuning(device(gpu::kVendorNvidia, "discrete"));
        FAIL() << "an unknown tuning name was accepted";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("'fastest'"), std::string::npos) << what;
        EXPECT_NE(what.find("nvidia"), std::string::npos) << what;
        EXPECT_NE(what.find("cpu-driver"), std::string::npos) << what;
    }
}

TEST_F(KernelTuningTest, IntegerDotIsTheEntrysUnlessTheEnvironmentOrTheCallerSaysOtherwise) {
    const gpu::DeviceInfo nvidia = device(gpu::kVendorNvidia, "discrete");
    EXPECT_EQ(gpu::kernel_tuning(nvidia).matvec_integer_dot, gpu::kernel_tuning_named("nvidia").matvec_integer_dot);
    setenv("INFERSCOPE_VK_INTEGER_DOT", "0", 1);
    EXPECT_FALSE(gpu::kernel_tuning(nvidia).matvec_integer_dot);
    EXPECT_TRUE(gpu::kernel_tuning(nvidia, "", true).matvec_integer_dot);  // the caller's choice wins
    setenv("INFERSCOPE_VK_INTEGER_DOT", "1", 1);
    EXPECT_TRUE(gpu::kernel_tuning(nvidia, "cpu-driver").matvec_integer_dot);
    EXPECT_FALSE(gpu::kernel_tuning(nvidia, "", false).matvec_integer_dot);
    setenv("INFERSCOPE_VK_INTEGER_DOT", "yes", 1);
    try {
        gpu::kernel_tuning(nvidia);
        FAIL() << "INFERSCOPE_VK_INTEGER_DOT=yes was accepted";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("INFERSCOPE_VK_INTEGER_DOT"), std::string::npos) << e.what();
    }
}

TEST(KernelTuningPredicates, IntegerDotNeedsTheFeatureTheEntryAndSubgroupsTheKernelsCanUse) {
    gpu::DeviceInfo info = device(gpu::kVendorNvidia, "discrete");
    info.integer_dot_product = true;
    info.subgroup_arithmetic = true;
    info.subgroup_size = 32;
    gpu::KernelTuning tuning = gpu::kernel_tuning_named("nvidia");
    tuning.matvec_integer_dot = true;
    EXPECT_TRUE(gpu::integer_dot_in_use(info, tuning));
    info.subgroup_size = 128;  // wider than the kernels' 64-thread workgroups
    EXPECT_FALSE(gpu::subgroup_reductions(info));
    EXPECT_FALSE(gpu::integer_dot_in_use(info, tuning));
    info.subgroup_size = 32;
    tuning.matvec_integer_dot = false;
    EXPECT_FALSE(gpu::integer_dot_in_use(info, tuning));
    tuning.matvec_integer_dot = true;
    info.integer_dot_product = false;
    EXPECT_FALSE(gpu::integer_dot_in_use(info, tuning));
}

TEST(GpuSkipMacro, ASettingThatNamesNoTuningFailsInsteadOfSkipping) {
    try {
        gpu::choose_vulkan_device();
    } catch (const Error& e) {
        GTEST_SKIP() << "no usable Vulkan device (install Mesa's lavapipe): " << e.what();
    }
    const auto make_or_skip = [] {
        std::unique_ptr<gpu::OpHarness> gpu;
        INFERSCOPE_MAKE_OR_SKIP_GPU(gpu, std::make_unique<gpu::OpHarness>(false, 0, "fastest"));
    };
    EXPECT_THROW(make_or_skip(), InvalidArgument);
}

bool power_of_two(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

TEST(KernelTuningTable, EveryEntryHasAUniqueNameAndShapesTheKernelsAccept) {
    std::set<std::string> names;
    for (const gpu::KernelTuning& t : gpu::kernel_tuning_table()) {
        EXPECT_TRUE(names.insert(t.name).second) << "two entries named " << t.name;
        // matvec.comp's workgroups: a power of two from 8 threads to its MAX_PARTS (256), and no
        // more than every usable device runs.
        for (uint32_t threads : {t.matvec_group_threads, t.matvec_wide_group_threads}) {
            EXPECT_TRUE(power_of_two(threads) && threads >= 8 && threads <= 256) << t.name << ": " << threads;
            EXPECT_LE(threads, gpu::kRequiredWorkgroupThreads) << t.name;
        }
        EXPECT_GE(t.matvec_units_per_thread, 1u) << t.name;
        EXPECT_GE(t.matvec_tall_units_per_thread, 1u) << t.name;
        EXPECT_GT(t.matvec_tall_rows, 0u) << t.name;
        EXPECT_GT(t.attention_workgroups, 0u) << t.name;
        EXPECT_GT(t.attention_workgroups_per_unit, 0u) << t.name;
    }
    EXPECT_EQ(gpu::kernel_tuning_table().front().name, "default");
}

}  // namespace
}  // namespace inferscope
