// The scheme grammar, canonical names, bits/weight and the shape checks.
#include <gtest/gtest.h>

#include <string>

#include "engine/core/error.h"
#include "engine/quant/scheme.h"

namespace inferscope {
namespace {

std::string error_of(const std::string& text) {
    try {
        parse_quant_scheme(text);
    } catch (const InvalidArgument& e) {
        return e.what();
    }
    return "";
}

TEST(QuantScheme, ParsesEveryFamilyAndPrintsItBack) {
    for (const char* text : {"int4:g128", "int8:row", "int2:tensor", "int3:g32", "nf4", "nf4:32", "q8_0", "q4_0",
                             "q4_k", "q6_k", "iq4_nl", "iq4_xs", "int4:g128:f32", "nf4:64:bf16", "int5:row:bf16"}) {
        SCOPED_TRACE(text);
        const QuantScheme s = parse_quant_scheme(text);
        // "nf4:64:bf16" prints without the default block.
        const std::string expected = std::string(text) == "nf4:64:bf16" ? "nf4:bf16" : text;
        EXPECT_EQ(s.name(), expected);
        EXPECT_EQ(parse_quant_scheme(s.name()).name(), s.name());
    }
}

TEST(QuantScheme, FieldsAreParsedIntoTheStruct) {
    const QuantScheme g = parse_quant_scheme("INT4:G128");
    EXPECT_EQ(g.family, SchemeFamily::Int);
    EXPECT_EQ(g.bits, 4);
    EXPECT_EQ(g.granularity, Granularity::Group);
    EXPECT_EQ(g.block, 128);
    EXPECT_EQ(g.scale_format, ScaleFormat::F16);
    EXPECT_EQ(g.execution_type(), GgmlType::F32);
    EXPECT_FALSE(g.executes_packed());

    const QuantScheme n = parse_quant_scheme("nf4");
    EXPECT_EQ(n.family, SchemeFamily::Nf4);
    EXPECT_EQ(n.block, 64);

    const QuantScheme k = parse_quant_scheme("Q4_K");
    EXPECT_EQ(k.family, SchemeFamily::Gguf);
    EXPECT_EQ(k.gguf_type, GgmlType::Q4_K);
    EXPECT_EQ(k.execution_type(), GgmlType::Q4_K);
    EXPECT_TRUE(k.executes_packed());
    EXPECT_EQ(parse_quant_scheme("int6:row:f32").scale_format, ScaleFormat::F32);
}

TEST(QuantScheme, BadTextIsRejectedWithAMessageNamingTheProblem) {
    EXPECT_NE(error_of("int9:row").find("out of range"), std::string::npos);
    EXPECT_NE(error_of("int1:row").find("out of range"), std::string::npos);
    EXPECT_NE(error_of("int4").find("granularity"), std::string::npos);
    EXPECT_NE(error_of("int4:col").find("unknown granularity \"col\""), std::string::npos);
    EXPECT_NE(error_of("int4:g").find("unknown granularity"), std::string::npos);
    EXPECT_NE(error_of("int4:g0").find("group size"), std::string::npos);
    EXPECT_NE(error_of("int4:g12x").find("group size"), std::string::npos);
    EXPECT_NE(error_of("nf4:1").find("NF4 block size"), std::string::npos);
    EXPECT_NE(error_of("nf4:64:1").find("too many fields"), std::string::npos);
    EXPECT_NE(error_of("q5_k").find("unknown scheme"), std::string::npos);
    EXPECT_NE(error_of("q8_0:row").find("unknown scheme"), std::string::npos);
    EXPECT_NE(error_of("").find("unknown scheme"), std::string::npos);
    EXPECT_NE(error_of("fp8").find("\"fp8\""), std::string::npos);
}

TEST(QuantScheme, BitsPerWeightCountScales) {
    EXPECT_DOUBLE_EQ(parse_quant_scheme("int4:g128").bits_per_weight(896, 4864), 4.125);
    EXPECT_DOUBLE_EQ(parse_quant_scheme("nf4").bits_per_weight(896, 4864), 4.25);
    EXPECT_DOUBLE_EQ(parse_quant_scheme("int8:row").bits_per_weight(896, 4864), 8.0 + 16.0 / 4864.0);
    EXPECT_DOUBLE_EQ(parse_quant_scheme("int4:tensor").bits_per_weight(896, 4864), 4.0 + 16.0 / (896.0 * 4864.0));
    EXPECT_DOUBLE_EQ(parse_quant_scheme("int4:g128:f32").bits_per_weight(896, 4864), 4.25);
    EXPECT_DOUBLE_EQ(parse_quant_scheme("nf4:32").bits_per_weight(8, 64), 4.5);
    EXPECT_DOUBLE_EQ(parse_quant_scheme("q8_0").bits_per_weight(896, 4864), 8.5);
    EXPECT_DOUBLE_EQ(parse_quant_scheme("q4_0").bits_per_weight(896, 4864), 4.5);
    EXPECT_DOUBLE_EQ(parse_quant_scheme("q4_k").bits_per_weight(896, 4864), 4.5);
    EXPECT_DOUBLE_EQ(parse_quant_scheme("q6_k").bits_per_weight(896, 4864), 6.5625);
}

TEST(QuantScheme, StorageBytesMatchBitsPerWeight) {
    // 896 x 4864 at int4:g128: 4 bits per weight plus one f16 per 128.
    EXPECT_EQ(parse_quant_scheme("int4:g128").storage_bytes(896, 4864), 896u * 4864u / 2u + 896u * 38u * 2u);
    EXPECT_EQ(parse_quant_scheme("int3:row").storage_bytes(3, 5), 6u + 3u * 2u);  // 45 bits -> 6 bytes
    EXPECT_EQ(parse_quant_scheme("q8_0").storage_bytes(2, 64), 2u * 2u * 34u);
    EXPECT_EQ(parse_quant_scheme("int4:g128").scale_count(896, 4864), 896 * 38);
    EXPECT_EQ(parse_quant_scheme("int8:tensor").scale_count(896, 4864), 1);
    EXPECT_EQ(parse_quant_scheme("q6_k").scale_count(896, 4864), 0);
}

TEST(QuantScheme, ShapesThatDoNotFitAreRejected) {
    try {
        parse_quant_scheme("int4:g128").check_shape(64, 172, "blk.0.ffn_down.weight");
        FAIL() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("group size 128 does not divide"), std::string::npos) << message;
        EXPECT_NE(message.find("blk.0.ffn_down.weight"), std::string::npos) << message;
    }
    EXPECT_THROW(parse_quant_scheme("nf4").check_shape(4, 96, "m"), InvalidArgument);
    try {
        parse_quant_scheme("q4_k").check_shape(4864, 896, "blk.3.ffn_gate.weight");
        FAIL() << "expected UnsupportedError";
    } catch (const UnsupportedError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("multiple of 256"), std::string::npos) << message;
        EXPECT_NE(message.find("blk.3.ffn_gate.weight"), std::string::npos) << message;
    }
    EXPECT_THROW(parse_quant_scheme("q8_0").check_shape(4, 48, "m"), UnsupportedError);
    EXPECT_NO_THROW(parse_quant_scheme("q8_0").check_shape(4, 96, "m"));
    EXPECT_NO_THROW(parse_quant_scheme("int4:tensor").check_shape(3, 7, "m"));
    EXPECT_NO_THROW(parse_quant_scheme("q6_k").check_shape(896, 4864 / 19, "m"));
}

TEST(QuantScheme, StoredScalesRoundThroughTheirFormat) {
    const float scale = 0.0123456789f;
    EXPECT_EQ(stored_scale(scale, ScaleFormat::F32), scale);
    EXPECT_NE(stored_scale(scale, ScaleFormat::F16), scale);
    EXPECT_NEAR(stored_scale(scale, ScaleFormat::F16), scale, scale * 1e-3);
    EXPECT_NEAR(stored_scale(scale, ScaleFormat::BF16), scale, scale * 8e-3);
    EXPECT_EQ(stored_scale(0.5f, ScaleFormat::F16), 0.5f);
    EXPECT_EQ(scale_format_bits(ScaleFormat::F16), 16);
    EXPECT_EQ(scale_format_bits(ScaleFormat::F32), 32);
}

}  // namespace
}  // namespace inferscope
