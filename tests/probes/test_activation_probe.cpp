// Probes: tensor-kind names, filtering by kind and layer on a real forward pass, detaching,
// and per-token capture across several passes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/probes/activation_probe.h"
#include "engine/probes/outlier_analysis.h"
#include "engine/runtime/session.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

TEST(TensorKinds, NamesWidthsAndUnknownKinds) {
    EXPECT_EQ(tensor_kind("blk.12.resid"), "resid");
    EXPECT_EQ(tensor_kind("blk.0.ffn_hidden"), "ffn_hidden");
    EXPECT_EQ(tensor_kind("token_embd"), "token_embd");
    EXPECT_EQ(tensor_kind("output_norm"), "output_norm");
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    const ModelConfig& c = model->config();
    EXPECT_EQ(block_tensor_width(c, "resid"), c.n_embd);
    EXPECT_EQ(block_tensor_width(c, "ffn_hidden"), c.n_ff);
    EXPECT_EQ(block_tensor_width(c, "k"), c.kv_dim());
    EXPECT_EQ(block_tensor_width(c, "attn_ctx"), c.q_dim());
    try {
        require_block_tensor_kind("residual");
        FAIL() << "an unknown tensor kind was accepted";
    } catch (const InvalidArgument& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("unknown tensor \"residual\""), std::string::npos) << message;
        EXPECT_NE(message.find("ffn_hidden"), std::string::npos) << message;
    }
}

// Records the name, layer and shape of every tensor it is given.
struct CallLog {
    std::vector<std::string> names;
    std::vector<int64_t> rows;
    std::vector<int64_t> cols;
    ActivationProbe::Callback recorder() {
        return [this](const NamedTensor& t) {
            names.emplace_back(t.name);
            rows.push_back(t.rows);
            cols.push_back(t.cols);
        };
    }
};

Batch prompt_batch(SeqId seq, int first_pos, int n_tokens) {
    Batch batch;
    for (int i = 0; i < n_tokens; ++i) batch.push_back({static_cast<TokenId>(10 + i), seq, first_pos + i, i + 1 == n_tokens});
    return batch;
}

TEST(ActivationProbe, PassesOnlyTheSubscribedKindAndLayerUntilDetached) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    InferenceSession session(model, testing::test_session_options());
    CallLog resid_layer1, every_ffn_hidden;
    ActivationProbe probe;
    probe.subscribe("resid", 1, resid_layer1.recorder());
    probe.subscribe("ffn_hidden", std::nullopt, every_ffn_hidden.recorder());
    const SeqId seq = session.new_sequence();
    {
        ProbeAttachment attached(session.backend(), probe);
        session.decode(prompt_batch(seq, 0, 5));
    }
    EXPECT_EQ(resid_layer1.names, std::vector<std::string>{"blk.1.resid"});
    EXPECT_EQ(resid_layer1.rows, std::vector<int64_t>{5});
    EXPECT_EQ(resid_layer1.cols, std::vector<int64_t>{model->config().n_embd});
    EXPECT_EQ(every_ffn_hidden.names, (std::vector<std::string>{"blk.0.ffn_hidden", "blk.1.ffn_hidden"}));
    EXPECT_EQ(every_ffn_hidden.cols.front(), model->config().n_ff);

    // Detached: a further pass reaches no callback.
    session.decode(prompt_batch(seq, 5, 2));
    EXPECT_EQ(resid_layer1.names.size(), 1u);
    EXPECT_EQ(every_ffn_hidden.names.size(), 2u);
}

TEST(TensorCapture, KeepsEveryTokenRowWithItsPositionAcrossPasses) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options());
    const int width = model->config().n_embd;
    TensorCapture capture(width);
    ActivationProbe probe;
    probe.subscribe("ffn_in", 0, [&](const NamedTensor& t) { capture.add_rows(t.data, t.rows, t.cols, t.tokens); });
    const SeqId seq = session.new_sequence();
    {
        ProbeAttachment attached(session.backend(), probe);
        session.decode(prompt_batch(seq, 0, 3));
        session.decode(prompt_batch(seq, 3, 4));
    }
    EXPECT_EQ(capture.n_tokens(), 7);
    EXPECT_EQ(capture.values().size(), static_cast<size_t>(7 * width));
    EXPECT_EQ(std::vector<int32_t>(capture.positions().begin(), capture.positions().end()),
              (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6}));
    float largest = 0;
    for (float v : capture.values()) largest = std::max(largest, std::abs(v));
    EXPECT_GT(largest, 0.0f);  // real activations, not an untouched buffer
    EXPECT_THROW(capture.add_rows(capture.values().data(), 1, width + 1, {}), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
