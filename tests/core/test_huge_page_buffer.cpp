// engine/core/huge_page_buffer.h: aligned to the huge page, usable for its whole length,
// movable, and empty for zero bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/huge_page_buffer.h"

namespace inferscope {
namespace {

TEST(HugePageBuffer, IsAlignedToTheHugePageAndWritableThroughout) {
    const size_t bytes = 3 * HugePageBuffer::kPageBytes + 4097;
    HugePageBuffer buffer(bytes);
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_EQ(buffer.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % HugePageBuffer::kPageBytes, 0u);
    std::memset(buffer.data(), 0x5A, bytes);
    EXPECT_EQ(buffer.data()[0], 0x5A);
    EXPECT_EQ(buffer.data()[bytes - 1], 0x5A);
}

TEST(HugePageBuffer, MovesItsMemoryAndIsEmptyForZeroBytes) {
    HugePageBuffer first(1000);
    first.data()[999] = 7;
    uint8_t* const memory = first.data();
    HugePageBuffer second(std::move(first));
    EXPECT_EQ(second.data(), memory);
    EXPECT_EQ(second.data()[999], 7);
    EXPECT_EQ(first.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    EXPECT_EQ(first.size(), 0u);
    HugePageBuffer third;
    third = std::move(second);
    EXPECT_EQ(third.data(), memory);
    EXPECT_EQ(HugePageBuffer(0).data(), nullptr);
}

TEST(HugePageBuffer, AnImpossibleSizeIsACapacityError) {
    EXPECT_THROW(HugePageBuffer(size_t{1} << 62), CapacityError);
}

}  // namespace
}  // namespace inferscope
