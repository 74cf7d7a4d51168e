// Type names and llama.cpp's file types (general.file_type) for the weight types a file can
// be written in: values as llama.h numbers its llama_ftype.
#include <gtest/gtest.h>

#include "engine/formats/ggml_type.h"
#include "engine/gguf/gguf_file.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

TEST(GgmlType, LlamaFileTypeOfEachWeightType) {
    const std::pair<GgmlType, uint32_t> expected[] = {
        {GgmlType::F32, 0},   {GgmlType::F16, 1},   {GgmlType::Q4_0, 2},  {GgmlType::Q4_1, 3},  {GgmlType::Q8_0, 7},
        {GgmlType::Q5_0, 8},  {GgmlType::Q5_1, 9},  {GgmlType::Q2_K, 10}, {GgmlType::Q3_K, 11}, {GgmlType::Q4_K, 14},
        {GgmlType::Q5_K, 16}, {GgmlType::Q6_K, 18}, {GgmlType::BF16, 32},
        {GgmlType::IQ4_NL, 25}, {GgmlType::IQ4_XS, 30},
    };
    for (const auto& [type, file_type] : expected) {
        SCOPED_TRACE(std::string(ggml_type_name(type)));
        EXPECT_EQ(llama_file_type(type), file_type);
    }
    // Activation-only and integer types name no file type.
    EXPECT_EQ(llama_file_type(GgmlType::Q8_K), std::nullopt);
    EXPECT_EQ(llama_file_type(GgmlType::I32), std::nullopt);
}

TEST(GgmlType, SyntheticModelsRecordTheirWeightTypeAsLlamaCppDoes) {
    for (const GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0,
                                GgmlType::IQ4_NL}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)));
        const auto bytes = testing::tiny_model_bytes(testing::tiny_spec("qwen2", type));
        const GgufFile file = GgufFile::from_bytes(bytes, "tiny.gguf");
        EXPECT_EQ(file.get_u64("general.file_type"), llama_file_type(type).value());
    }
}

}  // namespace
}  // namespace inferscope
