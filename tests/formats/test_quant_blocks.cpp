// Hand-built blocks: bytes written one by one from known scales and quants, decoded values
// worked out by hand from the format definitions (ggml-common.h), not by the implementation.
#include <gtest/gtest.h>

#include <bit>
#include <vector>

#include "engine/formats/quant.h"
#include "quant_test_util.h"

namespace inferscope {
namespace {

using testing::put_u16;

std::vector<float> decode(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
    EXPECT_EQ(bytes.size(), ggml_row_bytes(type, static_cast<uint64_t>(n)));
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(type, bytes.data(), out.data(), n);
    return out;
}

void expect_values(const std::vector<float>& actual, const std::vector<float>& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(actual[i], expected[i]) << "element " << i;
}

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400, kHalfTwo = 0x4000;
constexpr uint16_t kHalfMinusOne = 0xBC00;

TEST(QuantBlocks, Q4_0) {
    // {f16 d; u8 qs[16]}: element j = low nibble of qs[j], element j+16 = high nibble; x = (q-8)*d.
    std::vector<uint8_t> b(18, 0x98);  // low 8 -> 0, high 9 -> +d
    put_u16(b, 0, kHalfHalf);          // d = 0.5
    b[2 + 0] = 0x80;                   // element 0: q=0 -> -4;   element 16: q=8 -> 0
    b[2 + 1] = 0xF1;                   // element 1: q=1 -> -3.5; element 17: q=15 -> 3.5
    std::vector<float> expected(32, 0.0f);
    for (int j = 16; j < 32; ++j) expected[j] = 0.5f;
    expected[0] = -4.0f;
    expected[16] = 0.0f;
    expected[1] = -3.5f;
    expected[17] = 3.5f;
    expect_values(decode(GgmlType::Q4_0, b, 32), expected);
}

TEST(QuantBlocks, Q4_1) {
    // {f16 d, m; u8 qs[16]}: x = q*d + m.
    std::vector<uint8_t> b(20, 0x00);
    put_u16(b, 0, kHalfQuarter);   // d = 0.25
    put_u16(b, 2, kHalfMinusOne);  // m = -1
    b[4 + 0] = 0x2F;               // element 0: 15 -> 2.75; element 16: 2 -> -0.5
    std::vector<float> expected(32, -1.0f);
    expected[0] = 2.75f;
    expected[16] = -0.5f;
    expect_values(decode(GgmlType::Q4_1, b, 32), expected);
}

// Q5 blocks: qh is a little-endian u32 whose bit j is the 5th bit of element j.
// Bits set: 0 (element 0), 17 (element 17), 31 (element 31) -> bytes 01 00 02 80.
const uint8_t kQh[4] = {0x01, 0x00, 0x02, 0x80};

TEST(QuantBlocks, Q5_0) {
    // {f16 d; u8 qh[4]; u8 qs[16]}: x = (q5 - 16)*d.
    std::vector<uint8_t> b(22, 0x00);
    put_u16(b, 0, kHalfHalf);
    for (int i = 0; i < 4; ++i) b[2 + i] = kQh[i];
    b[6 + 0] = 0x3F;   // element 0: 15|16 = 31 -> 7.5;   element 16: 3 -> -6.5
    b[6 + 1] = 0xA0;   // element 1: 0 -> -8;             element 17: 10|16 = 26 -> 5
    b[6 + 15] = 0x50;  // element 15: 0 -> -8;            element 31: 5|16 = 21 -> 2.5
    std::vector<float> expected(32, -8.0f);  // q5 = 0 everywhere else
    expected[0] = 7.5f;
    expected[16] = -6.5f;
    expected[17] = 5.0f;
    expected[31] = 2.5f;
    expect_values(decode(GgmlType::Q5_0, b, 32), expected);
}

TEST(QuantBlocks, Q5_1) {
    // {f16 d, m; u8 qh[4]; u8 qs[16]}: x = q5*d + m.
    std::vector<uint8_t> b(24, 0x00);
    put_u16(b, 0, kHalfHalf);  // d = 0.5
    put_u16(b, 2, kHalfOne);   // m = 1
    for (int i = 0; i < 4; ++i) b[4 + i] = kQh[i];
    b[8 + 0] = 0x3F;
    b[8 + 1] = 0xA0;
    b[8 + 15] = 0x50;
    std::vector<float> expected(32, 1.0f);
    expected[0] = 16.5f;  // 31*0.5 + 1
    expected[16] = 2.5f;  // 3*0.5 + 1
    expected[17] = 14.0f; // 26*0.5 + 1
    expected[31] = 11.5f; // 21*0.5 + 1
    expect_values(decode(GgmlType::Q5_1, b, 32), expected);
}

TEST(QuantBlocks, Q8_0) {
    // {f16 d; i8 qs[32]}: x = q*d.
    std::vector<uint8_t> b(34);
    put_u16(b, 0, kHalfHalf);
    std::vector<float> expected(32);
    for (int j = 0; j < 32; ++j) {
        b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
        expected[j] = static_cast<float>(j - 16) * 0.5f;
    }
    b[2 + 0] = 0x80;  // -128 (legal in a file, never produced by the quantizer)
    expected[0] = -64.0f;
    expect_values(decode(GgmlType::Q8_0, b, 32), expected);
}

TEST(QuantBlocks, Q8_1) {
    // {f16 d, s; i8 qs[32]}: x = q*d (s is only used by the dot product).
    std::vector<uint8_t> b(36);
    put_u16(b, 0, kHalfTwo);
    put_u16(b, 2, 0x7C00);  // s: ignored by dequantization
    std::vector<float> expected(32);
    for (int j = 0; j < 32; ++j) {
        b[4 + j] = static_cast<uint8_t>(static_cast<int8_t>(3 - j));
        expected[j] = static_cast<float>(3 - j) * 2.0f;
    }
    expect_values(decode(GgmlType::Q8_1, b, 32), expected);
}

TEST(QuantBlocks, Q2_K) {
    // {u8 scales[16]; u8 qs[64]; f16 d, dmin}. Sub-block k (elements 16k..16k+15): scale =
    // scales[k] & 15, min = scales[k] >> 4, x = d*scale*q - dmin*min. Element e: half h =
    // e/128, r = e%128, q = (qs[32h + r%32] >> 2*(r/32)) & 3.
    std::vector<uint8_t> b(84, 0x00);
    put_u16(b, 80, kHalfHalf);     // d = 0.5
    put_u16(b, 82, kHalfQuarter);  // dmin = 0.25
    b[0] = 0x21;                   // sub 0: scale 1, min 2 -> x = 0.5q - 0.5
    b[1] = 0x03;                   // sub 1: scale 3, min 0 -> x = 1.5q
    b[2] = 0xF0;                   // sub 2: scale 0, min 15 -> x = -3.75
    b[9] = 0x1F;                   // sub 9: scale 15, min 1 -> x = 7.5q - 0.25
    b[16 + 0] = 0xE4;              // elements 0, 32, 64, 96: q = 0, 1, 2, 3
    b[16 + 1] = 0x03;              // element 1: q = 3
    b[16 + 16] = 0x02;             // element 16: q = 2
    b[16 + 48] = 0x01;             // element 144 (half 1, r = 16): q = 1
    std::vector<float> expected(256, 0.0f);
    for (int e = 0; e < 16; ++e) expected[e] = -0.5f;
    expected[0] = -0.5f;
    expected[1] = 1.0f;
    expected[16] = 3.0f;
    for (int e = 32; e < 48; ++e) expected[e] = -3.75f;
    for (int e = 144; e < 160; ++e) expected[e] = -0.25f;
    expected[144] = 7.25f;
    expect_values(decode(GgmlType::Q2_K, b, 256), expected);
}

TEST(QuantBlocks, Q3_K) {
    // {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}. Sixteen 6-bit scales v_j, used as
    // v_j - 32: low 4 bits in scales[j] (j<8) / the high nibble of scales[j-8] (j>=8), top 2
    // bits at bits 2*(j/4) of scales[8 + j%4]. Element e: 2-bit q as in Q2_K, minus 4 unless
    // bit e/32 of hmask[e%32] is set; x = d*(v - 32)*q.
    // Chosen: v0 = 33 (+1), v5 = 30 (-2), v10 = 63 (+31), v15 = 0 (-32), all others 32 (0).
    std::vector<uint8_t> b(110, 0x00);
    const uint8_t scales[12] = {0x01, 0x00, 0xF0, 0x00, 0x00, 0x0E, 0x00, 0x00, 0xAA, 0xA6, 0xBA, 0x2A};
    for (int i = 0; i < 12; ++i) b[96 + i] = scales[i];
    put_u16(b, 108, kHalfHalf);  // d = 0.5
    b[0] = 0x21;        // hmask[0]: element 0 (bit 0) and element 160 (bit 5)
    b[1] = 0x00;        // element 1: no high bit
    b[16] = 0x04;       // hmask[16] bit 2: element 80
    b[31] = 0x80;       // hmask[31] bit 7: element 255
    b[32 + 0] = 0x03;   // element 0: q = 3
    b[32 + 1] = 0x01;   // element 1: q = 1
    b[32 + 16] = 0x20;  // element 80 (r = 80: shift 4, byte 16): q = 2
    b[32 + 32] = 0x0C;  // element 160 (half 1, r = 32: shift 2, byte 32): q = 3
    b[32 + 63] = 0x40;  // element 255 (half 1, r = 127: shift 6, byte 63): q = 1
    std::vector<float> expected(256, 0.0f);
    for (int e = 0; e < 16; ++e) expected[e] = -2.0f;       // 0.5*1*(0-4)
    expected[0] = 1.5f;                                     // 0.5*1*3
    expected[1] = -1.5f;                                    // 0.5*1*(1-4)
    for (int e = 80; e < 96; ++e) expected[e] = 4.0f;       // 0.5*(-2)*(0-4)
    expected[80] = -2.0f;                                   // 0.5*(-2)*2
    for (int e = 160; e < 176; ++e) expected[e] = -62.0f;   // 0.5*31*(0-4)
    expected[160] = 46.5f;                                  // 0.5*31*3
    for (int e = 240; e < 256; ++e) expected[e] = 64.0f;    // 0.5*(-32)*(0-4)
    expected[255] = -16.0f;                                 // 0.5*(-32)*1
    expect_values(decode(GgmlType::Q3_K, b, 256), expected);
}

// The 6-bit scales/mins shared by Q4_K and Q5_K, packed in 12 bytes: for j < 4, scale =
// bytes[j] & 63 and min = bytes[j+4] & 63; for j >= 4, scale = (bytes[j+4] & 15) |
// (bytes[j-4] >> 6) << 4 and min = (bytes[j+4] >> 4) | (bytes[j] >> 6) << 4.
// Chosen: (scale, min) = (1, 2) for sub-block 0, (63, 0) for 1, (37, 50) for 4, (16, 1)
// for 7, (0, 0) elsewhere. 37 = 0b10'0101, 50 = 0b11'0010, 16 = 0b01'0000.
const uint8_t kK4Scales[12] = {0x81, 0x3F, 0x00, 0x40, 0xC2, 0x00, 0x00, 0x00, 0x25, 0x00, 0x00, 0x10};

TEST(QuantBlocks, Q4_K) {
    // {f16 d, dmin; u8 scales[12]; u8 qs[128]}. Sub-block j (32 elements) takes the low
    // nibbles (j even) or high nibbles (j odd) of qs[32*(j/2) ..]; x = d*scale*q - dmin*min.
    std::vector<uint8_t> b(144, 0x00);
    put_u16(b, 0, kHalfHalf);     // d = 0.5
    put_u16(b, 2, kHalfQuarter);  // dmin = 0.25
    for (int i = 0; i < 12; ++i) b[4 + i] = kK4Scales[i];
    b[16 + 0] = 0x2F;    // element 0: 15; element 32: 2
    b[16 + 1] = 0x10;    // element 1: 0;  element 33: 1
    b[16 + 64] = 0x03;   // element 128: 3
    b[16 + 127] = 0xF0;  // element 255: 15
    std::vector<float> expected(256, 0.0f);
    for (int e = 0; e < 32; ++e) expected[e] = -0.5f;       // 0.5*1*0 - 0.25*2
    expected[0] = 7.0f;                                     // 0.5*15 - 0.5
    expected[32] = 63.0f;                                   // 0.5*63*2
    expected[33] = 31.5f;
    for (int e = 128; e < 160; ++e) expected[e] = -12.5f;   // -0.25*50
    expected[128] = 43.0f;                                  // 0.5*37*3 - 12.5
    for (int e = 224; e < 256; ++e) expected[e] = -0.25f;   // -0.25*1
    expected[255] = 119.75f;                                // 0.5*16*15 - 0.25
    expect_values(decode(GgmlType::Q4_K, b, 256), expected);
}

TEST(QuantBlocks, Q5_K) {
    // As Q4_K plus qh[32]: the 5th bit of element 64c + l is bit 2c of qh[l], of element
    // 64c + 32 + l bit 2c+1.
    std::vector<uint8_t> b(176, 0x00);
    put_u16(b, 0, kHalfHalf);
    put_u16(b, 2, kHalfQuarter);
    for (int i = 0; i < 12; ++i) b[4 + i] = kK4Scales[i];
    b[16 + 0] = 0x11;   // qh[0]: element 0 (bit 0) and element 128 (bit 4)
    b[16 + 5] = 0x02;   // qh[5] bit 1: element 37
    b[16 + 31] = 0x80;  // qh[31] bit 7: element 255
    b[48 + 0] = 0x2F;
    b[48 + 1] = 0x10;
    b[48 + 64] = 0x03;
    b[48 + 127] = 0xF0;
    std::vector<float> expected(256, 0.0f);
    for (int e = 0; e < 32; ++e) expected[e] = -0.5f;
    expected[0] = 15.0f;                                    // 0.5*(15+16) - 0.5
    expected[32] = 63.0f;
    expected[33] = 31.5f;
    expected[37] = 504.0f;                                  // 0.5*63*16
    for (int e = 128; e < 160; ++e) expected[e] = -12.5f;
    expected[128] = 339.0f;                                 // 0.5*37*19 - 12.5
    for (int e = 224; e < 256; ++e) expected[e] = -0.25f;
    expected[255] = 247.75f;                                // 0.5*16*31 - 0.25
    expect_values(decode(GgmlType::Q5_K, b, 256), expected);
}

TEST(QuantBlocks, Q6_K) {
    // {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}. Element e: h = e/128, r = e%128,
    // g = r/32, l = r%32; low 4 bits from ql[64h + 32*(g&1) + l] (low nibble for g < 2, high
    // for g >= 2), top 2 bits from bits 2g of qh[32h + l]; x = d*scales[e/16]*(q6 - 32).
    std::vector<uint8_t> b(210, 0x00);
    put_u16(b, 208, kHalfHalf);
    b[192 + 0] = 1;
    b[192 + 1] = static_cast<uint8_t>(-3);
    b[192 + 8] = 127;
    b[192 + 15] = 0x80;  // -128
    b[0] = 0x0F;         // element 0: low bits 15
    b[128 + 0] = 0x03;   //            high bits 3 -> q6 = 63
    b[16] = 0x05;        // element 16: low bits 5
    b[128 + 16] = 0x02;  //             high bits 2 -> q6 = 37
    b[64] = 0x01;        // element 128: low bits 1
    b[128 + 32] = 0x02;  //              high bits 2 -> q6 = 33
    b[127] = 0xA0;       // element 255 (h 1, g 3, l 31): low bits 10 (high nibble of ql[127])
    b[128 + 63] = 0x40;  //              high bits 1 (bits 6-7 of qh[63]) -> q6 = 26
    std::vector<float> expected(256, 0.0f);
    for (int e = 0; e < 16; ++e) expected[e] = -16.0f;        // 0.5*1*(0-32)
    expected[0] = 15.5f;                                      // 0.5*1*31
    for (int e = 16; e < 32; ++e) expected[e] = 48.0f;        // 0.5*(-3)*(-32)
    expected[16] = -7.5f;                                     // 0.5*(-3)*5
    for (int e = 128; e < 144; ++e) expected[e] = -2032.0f;   // 0.5*127*(-32)
    expected[128] = 63.5f;                                    // 0.5*127*1
    for (int e = 240; e < 256; ++e) expected[e] = 2048.0f;    // 0.5*(-128)*(-32)
    expected[255] = 384.0f;                                   // 0.5*(-128)*(-6)
    expect_values(decode(GgmlType::Q6_K, b, 256), expected);
}

TEST(QuantBlocks, Q8_K) {
    // {f32 d; i8 qs[256]; i16 bsums[16]}: x = d*q.
    std::vector<uint8_t> b(292, 0x00);
    const uint32_t d_bits = std::bit_cast<uint32_t>(-0.25f);
    for (int i = 0; i < 4; ++i) b[i] = static_cast<uint8_t>(d_bits >> (8 * i));
    std::vector<float> expected(256);
    for (int k = 0; k < 256; ++k) {
        b[4 + k] = static_cast<uint8_t>(k - 128);
        expected[k] = static_cast<float>(k - 128) * -0.25f;
    }
    expect_values(decode(GgmlType::Q8_K, b, 256), expected);
}

TEST(QuantBlocks, RowsOfSeveralBlocksDecodeBlockByBlock) {
    // Two Q4_0 blocks with different scales: the second block's scale must not leak.
    std::vector<uint8_t> b(36, 0x00);  // all q = 0 -> -8*d
    put_u16(b, 0, kHalfHalf);
    put_u16(b, 18, kHalfTwo);
    const auto values = decode(GgmlType::Q4_0, b, 64);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(values[j], -4.0f);
    for (int j = 32; j < 64; ++j) EXPECT_EQ(values[j], -16.0f);
}

TEST(QuantBlocks, UnalignedSourceRows) {
    // Rows come from mmapped files at any offset; decode from an odd address.
    std::vector<uint8_t> storage(1 + 292, 0x00);
    const uint32_t d_bits = std::bit_cast<uint32_t>(0.5f);
    for (int i = 0; i < 4; ++i) storage[1 + i] = static_cast<uint8_t>(d_bits >> (8 * i));
    storage[1 + 4 + 7] = 10;
    std::vector<float> out(256);
    dequantize_row(GgmlType::Q8_K, storage.data() + 1, out.data(), 256);
    EXPECT_EQ(out[7], 5.0f);
    EXPECT_EQ(out[8], 0.0f);
}

}  // namespace
}  // namespace inferscope
