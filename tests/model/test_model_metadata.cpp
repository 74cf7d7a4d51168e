// Hyperparameters that would make every logit NaN are refused at load time, naming the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/synth/synthetic_model.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

std::string load_error(const std::string& key, GgufValue value) {
    GgufWriter writer = build_synthetic_model(testing::tiny_spec("llama"));
    writer.set(key, value);
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("inferscope-metadata-" + std::to_string(::getpid()) + ".gguf")).string();
    writer.write_file(path);
    std::string message = "(loaded)";
    try {
        Model::load(path);
    } catch (const GgufError& e) {
        message = e.what();
    }
    std::filesystem::remove(path);
    return message;
}

TEST(ModelMetadata, NonFiniteOrOverflowingFloatsAreRefusedByKey) {
    const double inf = std::numeric_limits<double>::infinity();
    EXPECT_NE(load_error("llama.rope.freq_base", GgufValue::f32(static_cast<float>(inf)))
                  .find("metadata key \"llama.rope.freq_base\" has value inf (must be a positive, finite float)"),
              std::string::npos);
    EXPECT_NE(load_error("llama.attention.layer_norm_rms_epsilon", GgufValue::f32(std::numeric_limits<float>::quiet_NaN()))
                  .find("\"llama.attention.layer_norm_rms_epsilon\" has value nan"),
              std::string::npos);
    EXPECT_NE(load_error("llama.rope.freq_base", GgufValue::f64(1e300)).find("has value 1e+300"), std::string::npos);
    EXPECT_NE(load_error("llama.rope.freq_base", GgufValue::f32(-1.0f)).find("has value -1"), std::string::npos);
    EXPECT_EQ(load_error("llama.rope.freq_base", GgufValue::f32(500000.0f)), "(loaded)");
}

}  // namespace
}  // namespace inferscope
