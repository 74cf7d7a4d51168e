#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace inferscope {
namespace {

GgufWriter writer_with_every_value_type(uint32_t alignment) {
    GgufWriter w(alignment);
    w.set("t.u8", GgufValue::u8(200));
    w.set("t.i8", GgufValue::i8(-100));
    w.set("t.u16", GgufValue::u16(60000));
    w.set("t.i16", GgufValue::i16(-30000));
    w.set("t.u32", GgufValue::u32(4000000000u));
    w.set("t.i32", GgufValue::i32(-2000000000));
    w.set("t.u64", GgufValue::u64(uint64_t{1} << 60));
    w.set("t.i64", GgufValue::i64(-(int64_t{1} << 60)));
    w.set("t.f32", GgufValue::f32(1.5f));
    w.set("t.f64", GgufValue::f64(-2.25));
    w.set("t.bool", GgufValue::boolean(true));
    w.set("t.string", GgufValue::string("h\xC3\xA9llo"));
    GgufArray inner{GgufType::INT32, {GgufValue::i32(1), GgufValue::i32(2)}};
    GgufArray outer{GgufType::ARRAY, {GgufValue::array(inner), GgufValue::array(GgufArray{GgufType::INT32, {}})}};
    w.set("t.nested", GgufValue::array(outer));
    w.set("t.strings", GgufValue::string_array({"a", "", "ccc"}));
    return w;
}

TEST(GgufRoundTrip, EveryMetadataTypeSurvives) {
    const GgufFile f = GgufFile::from_bytes(writer_with_every_value_type(32).to_bytes(), "mem.gguf");
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.find("t.u8")->type(), GgufType::UINT8);
    EXPECT_EQ(f.get_u64("t.u8"), 200u);
    EXPECT_EQ(f.find("t.i8")->as_i64(), -100);
    EXPECT_EQ(f.get_u64("t.u16"), 60000u);
    EXPECT_EQ(f.find("t.i16")->as_i64(), -30000);
    EXPECT_EQ(f.get_u64("t.u32"), 4000000000u);
    EXPECT_EQ(f.find("t.i32")->as_i64(), -2000000000);
    EXPECT_EQ(f.get_u64("t.u64"), uint64_t{1} << 60);
    EXPECT_EQ(f.find("t.i64")->as_i64(), -(int64_t{1} << 60));
    EXPECT_EQ(f.get_f64("t.f32"), 1.5);
    EXPECT_EQ(f.find("t.f32")->type(), GgufType::FLOAT32);
    EXPECT_EQ(f.get_f64("t.f64"), -2.25);
    EXPECT_TRUE(f.get_bool("t.bool", false));
    EXPECT_EQ(f.get_string("t.string"), "h\xC3\xA9llo");
    const GgufArray& nested = f.get_array("t.nested");
    ASSERT_EQ(nested.element_type(), GgufType::ARRAY);
    ASSERT_EQ(nested.size(), 2u);
    EXPECT_EQ(nested.at(0).as_i32_vector(), (std::vector<int32_t>{1, 2}));
    EXPECT_TRUE(nested.at(1).as_array().empty());
    EXPECT_EQ(f.find("t.strings")->as_string_vector(), (std::vector<std::string>{"a", "", "ccc"}));
    // insertion order is kept
    EXPECT_EQ(f.metadata().front().key, "t.u8");
}

TEST(GgufRoundTrip, TensorsAreAlignedAndExact) {
    for (uint32_t alignment : {32u, 64u, 128u}) {
        GgufWriter w = writer_with_every_value_type(alignment);
        const std::vector<float> a = {1, 2, 3, 4, 5, 6};
        w.add_f32_tensor("a", {3, 2}, a);
        std::vector<uint8_t> q(34 * 2, 0x11);
        w.add_tensor("b.q8", {64}, GgmlType::Q8_0, q);
        w.add_f32_tensor("c", {1}, std::vector<float>{7});
        const GgufFile f = GgufFile::from_bytes(w.to_bytes(), "mem.gguf");
        EXPECT_EQ(f.alignment(), alignment);
        EXPECT_EQ(f.data_offset() % alignment, 0u);
        ASSERT_EQ(f.tensors().size(), 3u);
        const GgufTensorInfo* ta = f.find_tensor("a");
        ASSERT_NE(ta, nullptr);
        EXPECT_EQ(ta->dims.to_vector(), (std::vector<uint64_t>{3, 2}));
        EXPECT_EQ(ta->rows(), 2u);
        EXPECT_EQ(ta->byte_count, 24u);
        EXPECT_EQ(std::memcmp(ta->data.data(), a.data(), 24), 0);
        const GgufTensorInfo* tb = f.find_tensor("b.q8");
        ASSERT_NE(tb, nullptr);
        EXPECT_EQ(tb->type, GgmlType::Q8_0);
        EXPECT_EQ(tb->byte_count, 68u);
        EXPECT_EQ(tb->offset % alignment, 0u);
        EXPECT_EQ(tb->data[67], 0x11);
        EXPECT_EQ(f.find_tensor("c")->offset % alignment, 0u);
        EXPECT_EQ(f.find_tensor("missing"), nullptr);
    }
}

TEST(GgufRoundTrip, WriterRejectsInconsistentTensors) {
    GgufWriter w;
    EXPECT_THROW(w.add_tensor("x", {33}, GgmlType::Q8_0, std::vector<uint8_t>(34)), InvalidArgument);
    EXPECT_THROW(w.add_tensor("x", {32}, GgmlType::Q8_0, std::vector<uint8_t>(33)), InvalidArgument);
    w.add_tensor("x", {32}, GgmlType::Q8_0, std::vector<uint8_t>(34));
    EXPECT_THROW(w.add_tensor("x", {32}, GgmlType::Q8_0, std::vector<uint8_t>(34)), InvalidArgument);
    EXPECT_THROW(GgufWriter(24), InvalidArgument);
}

TEST(GgufRoundTrip, TypedGettersNameKeyAndProblem) {
    const GgufFile f = GgufFile::from_bytes(writer_with_every_value_type(32).to_bytes(), "mem.gguf");
    try {
        (void)f.get_string("t.u32");
        FAIL() << "expected a GgufError";
    } catch (const GgufError& e) {
        EXPECT_NE(std::string(e.what()).find("t.u32"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("uint32"), std::string::npos) << e.what();
    }
    try {
        (void)f.get_u64("absent.key");
        FAIL() << "expected a GgufError";
    } catch (const GgufError& e) {
        EXPECT_NE(std::string(e.what()).find("absent.key"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
    }
    EXPECT_THROW((void)f.get_u64("t.i8"), GgufError);  // negative as unsigned
    EXPECT_EQ(f.get_u64("absent.key", 5), 5u);
}

// The fingerprint covers the size and both ends of the file: a change in the first or last
// MiB, or in the length, gives another; the same bytes give the same one.
TEST(GgufRoundTrip, ContentFingerprintFollowsTheBytes) {
    const auto with_tensor = [](size_t floats, float last) {
        std::vector<float> values(floats, 0.5f);
        values.back() = last;
        GgufWriter w;
        w.set("general.architecture", GgufValue::string("llama"));
        w.add_f32_tensor("t", {static_cast<uint64_t>(floats)}, values);
        return w.to_bytes();
    };
    const size_t big = size_t{3} << 20 >> 2;  // 3 MiB of floats: the middle MiB is not read
    const std::string base = GgufFile::from_bytes(with_tensor(big, 1.0f), "a").content_fingerprint();
    EXPECT_EQ(base.size(), 16u);
    EXPECT_EQ(GgufFile::from_bytes(with_tensor(big, 1.0f), "b").content_fingerprint(), base);
    EXPECT_NE(GgufFile::from_bytes(with_tensor(big, 2.0f), "a").content_fingerprint(), base);
    EXPECT_NE(GgufFile::from_bytes(with_tensor(big + 8, 1.0f), "a").content_fingerprint(), base);
    const std::vector<uint8_t> small = with_tensor(16, 1.0f);
    EXPECT_NE(GgufFile::from_bytes(small, "s").content_fingerprint(), base);
}

}  // namespace
}  // namespace inferscope
