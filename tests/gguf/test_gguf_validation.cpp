// Malformed files, each built byte by byte: the reader must reject every one with a
// GgufError naming the file, the offset and the problem.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "support/raw_gguf.h"

namespace inferscope {
namespace {

using testing::RawGguf;

// Parses and returns the GgufError (failing the test when parsing succeeds).
GgufError parse_error(const std::vector<uint8_t>& bytes) {
    try {
        GgufFile::from_bytes(bytes, "bad.gguf");
    } catch (const GgufError& e) {
        return e;
    }
    ADD_FAILURE() << "the file was accepted";
    return GgufError("none", 0, "none");
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle, uint64_t offset) {
    const GgufError e = parse_error(bytes);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.gguf"), std::string::npos) << e.what();
    EXPECT_EQ(e.offset(), offset) << e.what();
}

TEST(GgufValidation, HeaderProblems) {
    expect_error({}, "truncated", 0);
    expect_error({'G', 'G', 'U'}, "truncated", 0);
    expect_error(RawGguf().u32(0x46554746).u32(3).u64(0).u64(0).bytes(), "not a GGUF file", 0);
    expect_error(RawGguf().header(0, 0, 1).bytes(), "version 1", 4);
    expect_error(RawGguf().header(0, 0, 4).bytes(), "unsupported GGUF version 4", 4);
    expect_error(RawGguf().u32(kGgufMagic).u32(3).u64(0).bytes(), "truncated", 16);
    expect_error(RawGguf().header(0, uint64_t{1} << 40).bytes(), "metadata count", 24);
    expect_error(RawGguf().header(uint64_t{1} << 40, 0).bytes(), "tensor count", 24);
}

TEST(GgufValidation, MetadataProblems) {
    expect_error(RawGguf().header(0, 1).u64(1000).zeros(8).bytes(), "claims 1000 bytes", 24);
    expect_error(RawGguf().header(0, 1).str("").u32(4).u32(1).bytes(), "is empty", 24);
    expect_error(RawGguf().header(0, 1).str("k").u32(13).bytes(), "invalid metadata value type 13", 33);
    expect_error(RawGguf().header(0, 1).str("k").u32(7).u8(2).bytes(), "neither 0 nor 1", 37);
    expect_error(RawGguf().header(0, 1).str("k").u32(9).u32(4).u64(uint64_t{1} << 50).bytes(), "array element count", 49);
    expect_error(RawGguf().header(0, 1).str("k").u32(9).u32(99).u64(1).bytes(), "invalid array element type 99", 37);
    expect_error(RawGguf().header(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2).bytes(), "duplicate metadata key", 41);
    expect_error(RawGguf().header(0, 1).str("k").u32(8).u64(5).bytes(), "claims 5 bytes", 37);
    // arrays nested past the limit
    RawGguf deep;
    deep.header(0, 1).str("k").u32(9);
    for (int i = 0; i < 9; ++i) deep.u32(9).u64(1);
    deep.u32(4).u64(0);
    EXPECT_NE(std::string(parse_error(deep.bytes()).what()).find("nested deeper"), std::string::npos);
}

TEST(GgufValidation, AlignmentMustBeAPowerOfTwo) {
    expect_error(RawGguf().header(0, 1).str("general.alignment").u32(4).u32(48).bytes(), "power-of-two", 57);
    expect_error(RawGguf().header(0, 1).str("general.alignment").u32(4).u32(0).bytes(), "power-of-two", 57);
    expect_error(RawGguf().header(0, 1).str("general.alignment").u32(10).u64(32).bytes(), "power-of-two", 61);
}

TEST(GgufValidation, TensorInfoProblems) {
    expect_error(RawGguf().header(1, 0).tensor("", {4}, 0, 0).pad().zeros(32).bytes(), "empty name", 24);
    expect_error(RawGguf().header(1, 0).tensor("w", {}, 0, 0).pad().zeros(32).bytes(), "has 0 dimensions", 33);
    expect_error(RawGguf().header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0).pad().zeros(64).bytes(), "has 5 dimensions", 33);
    expect_error(RawGguf().header(1, 0).tensor("w", {4, 0}, 0, 0).pad().zeros(32).bytes(), "dimension 1 is 0", 45);
    expect_error(RawGguf().header(1, 0).tensor("w", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0).pad().zeros(32).bytes(),
                 "overflows", 45);
    // 2^62 F32 elements are 2^64 bytes: the byte count wrapped to 0 and the tensor was accepted.
    expect_error(RawGguf().header(1, 0).tensor("w", {uint64_t{1} << 62}, 0, 0).pad().zeros(32).bytes(),
                 "byte count overflows (4611686018427387904 F32 elements)", 45);
    expect_error(RawGguf().header(1, 0).tensor("w", {4}, 4, 0).pad().zeros(32).bytes(), "unknown tensor type id 4", 45);
    expect_error(RawGguf().header(1, 0).tensor("w", {4}, 1000, 0).pad().zeros(32).bytes(), "unknown tensor type id 1000", 45);
    expect_error(RawGguf().header(1, 0).tensor("w", {48}, 8, 0).pad().zeros(64).bytes(), "not a multiple of the Q8_0 block size 32",
                 45);
    expect_error(RawGguf().header(1, 0).tensor("w", {4}, 0, 16).pad().zeros(64).bytes(), "not a multiple of the alignment", 49);
    expect_error(RawGguf().header(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad().zeros(64).bytes(),
                 "duplicate tensor name", 57);
}

// Bytes the allocator holds for the program, in its arenas and in chunks of their own mapping.
size_t allocated_bytes() {
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

// allocated_bytes() now, or nothing where the allocator does not report it (the sanitizers'
// allocator answers mallinfo2 with zeros).
std::optional<size_t> heap_bytes_in_use() {
    const size_t before = allocated_bytes();
    std::vector<uint8_t> probe(1 << 20, 1);
    if (allocated_bytes() < before + probe.size()) return std::nullopt;
    probe.clear();
    probe.shrink_to_fit();
    return allocated_bytes();
}

#define REQUIRE_HEAP_ACCOUNTING(name)                                                              \
    const std::optional<size_t> name = heap_bytes_in_use();                                        \
    if (!name) GTEST_SKIP() << "this allocator does not report heap use through mallinfo2 "        \
                               "(a sanitizer build); the release build runs this test"

// Metadata costs about what it occupies in the file: a 21 MB file with one uint8 array took
// 968 MB when every element became a GgufValue.
TEST(GgufValidation, AScalarArrayTakesTheMemoryItTakesInTheFile) {
    constexpr uint64_t kCount = 8u << 20;
    std::vector<uint8_t> bytes = RawGguf().header(0, 1).str("big").u32(9).u32(0).u64(kCount).zeros(kCount).bytes();
    bytes[bytes.size() - 1] = 7;
    REQUIRE_HEAP_ACCOUNTING(before);
    const GgufFile file = GgufFile::from_bytes(std::move(bytes), "big.gguf");
    const size_t grown = allocated_bytes() - std::min(*before, allocated_bytes());
    const GgufArray& array = file.get_array("big");
    ASSERT_EQ(array.size(), kCount);
    EXPECT_EQ(array.at(kCount - 1).as_u64(), 7u);
    EXPECT_EQ(array.at(0).type(), GgufType::UINT8);
    // The file's buffer is taken over; what grows is the array's bytes.
    EXPECT_LT(grown, 3 * kCount) << grown << " bytes grown for a " << kCount << "-byte array";
}

// Every entry of a header costs a few times its bytes at most.
TEST(GgufValidation, ManySmallEntriesTakeAFewTimesTheirBytes) {
    constexpr uint32_t kEntries = 200000;
    RawGguf tensors;
    tensors.header(kEntries, 0);
    for (uint32_t i = 0; i < kEntries; ++i) tensors.tensor(std::string("t").append(std::to_string(i)), {8}, 0, uint64_t{i} * 32);
    const size_t tensor_header_bytes = tensors.bytes().size();
    RawGguf pairs;
    pairs.header(0, kEntries);
    for (uint32_t i = 0; i < kEntries; ++i) pairs.str(std::string("k").append(std::to_string(i))).u32(0).u8(static_cast<uint8_t>(i));
    const size_t pair_header_bytes = pairs.bytes().size();
    std::vector<uint8_t> tensor_file = tensors.pad().zeros(size_t{kEntries} * 32).bytes();
    std::vector<uint8_t> pair_file = pairs.bytes();

    REQUIRE_HEAP_ACCOUNTING(before_tensors);
    const GgufFile with_tensors = GgufFile::from_bytes(std::move(tensor_file), "tensors.gguf");
    const size_t tensors_grown = allocated_bytes() - std::min(*before_tensors, allocated_bytes());
    ASSERT_EQ(with_tensors.tensors().size(), kEntries);
    ASSERT_NE(with_tensors.find_tensor("t199999"), nullptr);
    EXPECT_EQ(with_tensors.find_tensor("t199999")->offset, uint64_t{199999} * 32);
    EXPECT_EQ(with_tensors.find_tensor("t2000000"), nullptr);
    EXPECT_LT(tensors_grown, 4 * tensor_header_bytes) << tensors_grown << " bytes for " << tensor_header_bytes << " header bytes";

    const size_t before_pairs = allocated_bytes();
    const GgufFile with_pairs = GgufFile::from_bytes(std::move(pair_file), "pairs.gguf");
    const size_t pairs_grown = allocated_bytes() - std::min(before_pairs, allocated_bytes());
    ASSERT_EQ(with_pairs.metadata().size(), kEntries);
    EXPECT_EQ(with_pairs.get_u64("k1234"), 1234u % 256);
    EXPECT_LT(pairs_grown, 6 * pair_header_bytes) << pairs_grown << " bytes for " << pair_header_bytes << " header bytes";
    std::printf("[ measured ] %zu tensor entries: %zu header bytes, %zu bytes held; %zu scalar pairs: %zu header bytes, %zu held\n",
                size_t{kEntries}, tensor_header_bytes, tensors_grown, size_t{kEntries}, pair_header_bytes, pairs_grown);
}

TEST(GgufValidation, TensorDataMustLieInsideTheFile) {
    // header 24 + tensor info (8+1 name, 4, 8, 4, 8) = 57 -> data section at 64
    expect_error(RawGguf().header(1, 0).tensor("w", {16}, 0, 0).pad().zeros(63).bytes(), "outside the 63-byte data section",
                 64);
    expect_error(RawGguf().header(1, 0).tensor("w", {16}, 0, 0).bytes(), "data section would start at 64", 57);
    expect_error(RawGguf().header(1, 0).tensor("w", {4}, 0, uint64_t{1} << 62).pad().zeros(32).bytes(), "outside", 96);
    expect_error(RawGguf().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).pad().zeros(96).bytes(),
                 "overlaps", 128);
    // the same layout without the overlap is accepted
    EXPECT_NO_THROW(
        GgufFile::from_bytes(RawGguf().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 64).pad().zeros(128).bytes(),
                             "ok.gguf"));
}

TEST(GgufValidation, FileSystemProblemsAreNamed) {
    try {
        GgufFile::open("/nonexistent/model.gguf");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf: no such file"), std::string::npos) << e.what();
    }
    const auto dir = std::filesystem::temp_directory_path();
    try {
        GgufFile::open(dir.string());
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    }
    const auto empty = dir / "inferscope-empty-test.gguf";
    std::ofstream(empty).close();
    try {
        GgufFile::open(empty.string());
        FAIL();
    } catch (const GgufError& e) {
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
    std::filesystem::remove(empty);
}

}  // namespace
}  // namespace inferscope
