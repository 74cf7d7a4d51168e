// A small real model file, truncated at every byte offset and mutated thousands of times:
// loading must never crash (the sanitizer build checks memory and UB) and every rejection
// must be a typed error with a message.
#include <gtest/gtest.h>

#include <random>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

SyntheticModelSpec fuzz_spec() {
    SyntheticModelSpec s = testing::tiny_spec("qwen2");
    s.n_layer = 1;
    s.n_embd = 32;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.n_ff = 32;
    s.n_vocab = 260;
    return s;
}

// Loads the bytes as a model and, when that succeeds, runs a two-token forward pass.
// Returns "" on success or the error message.
std::string load_and_run(std::vector<uint8_t> bytes) {
    try {
        const auto model = Model::from_gguf(GgufFile::from_bytes(std::move(bytes), "fuzz.gguf"));
        SessionOptions options;
        options.n_threads = 1;
        options.n_ctx = 8;
        InferenceSession session(model, options);
        const SeqId seq = session.new_sequence();
        const Batch batch = {{1, seq, 0, false}, {2, seq, 1, true}};
        (void)session.decode(batch);
        return "";
    } catch (const Error& e) {
        const std::string message = e.what();
        return message.empty() ? "<empty message>" : message;
    }
}

TEST(GgufFuzz, EveryTruncationIsRejectedWithAMessage) {
    const std::vector<uint8_t> full = testing::tiny_model_bytes(fuzz_spec());
    const GgufFile reference = GgufFile::from_bytes(full, "full.gguf");
    uint64_t data_end = 0;
    for (const auto& t : reference.tensors()) data_end = std::max(data_end, reference.data_offset() + t.offset + t.byte_count);
    ASSERT_LE(data_end, full.size());

    for (size_t size = 0; size < full.size(); ++size) {
        std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(size));
        try {
            GgufFile::from_bytes(std::move(cut), "cut.gguf");
            // Only the padding after the last tensor's data may be cut away.
            EXPECT_GE(size, data_end) << "truncation at " << size << " was accepted";
        } catch (const GgufError& e) {
            EXPECT_LT(size, data_end);
            EXPECT_NE(std::string(e.what()).find("cut.gguf: at byte offset"), std::string::npos) << e.what();
            EXPECT_LE(e.offset(), full.size());
        }
    }
}

TEST(GgufFuzz, SeededMutationsNeverCrash) {
    const std::vector<uint8_t> full = testing::tiny_model_bytes(fuzz_spec());
    const uint64_t header_end = GgufFile::from_bytes(full, "full.gguf").data_offset();
    std::mt19937_64 rng(20261129);
    int rejected = 0;
    constexpr int kMutations = 3000;
    for (int i = 0; i < kMutations; ++i) {
        std::vector<uint8_t> bytes = full;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) {
            // Mostly the header (where structure lives), sometimes anywhere.
            const uint64_t span = (rng() % 8 == 0) ? bytes.size() : header_end;
            const auto at = static_cast<size_t>(rng() % span);
            switch (rng() % 3) {
                case 0: bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
                case 1: bytes[at] = static_cast<uint8_t>(rng()); break;
                default: bytes[at] = (rng() % 2) ? 0xFF : 0x00; break;
            }
        }
        const std::string error = load_and_run(std::move(bytes));
        if (!error.empty()) ++rejected;
    }
    // Most header mutations break something; a few only change a value harmlessly.
    EXPECT_GT(rejected, kMutations / 4);
    std::printf("[ mutations ] %d of %d rejected with an error, the rest loaded and ran\n", rejected, kMutations);
}

}  // namespace
}  // namespace inferscope
