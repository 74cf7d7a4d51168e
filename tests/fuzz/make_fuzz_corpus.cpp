// Writes seed inputs: small valid models of every architecture and several types for fuzz_gguf,
// and, given a second folder, a llama2.c tokenizer for fuzz_text_parsers (first byte 0xF0
// selects that reader).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "support/tiny_models.h"

namespace {

void write_gguf_seeds(const std::string& dir) {
    int index = 0;
    for (const char* arch : {"llama", "qwen2", "qwen3", "gemma3"}) {
        for (auto dtype : {inferscope::GgmlType::F32, inferscope::GgmlType::F16, inferscope::GgmlType::Q8_0}) {
            auto spec = inferscope::testing::tiny_spec(arch, dtype);
            spec.n_layer = 1;
            spec.n_embd = 32;
            spec.n_head = 2;
            spec.n_head_kv = 1;
            spec.n_ff = 32;
            spec.n_vocab = 260;
            inferscope::build_synthetic_model(spec).write_file(dir + "/seed" + std::to_string(index++) + ".gguf");
        }
    }
}

// The four-token vocabulary of fuzz_text_parsers' tiny checkpoint, as llama2.c's tokenizer.py writes it.
bool write_llama2c_tokenizer_seed(const std::string& dir) {
    std::string bytes(1, '\xF0');
    const auto put = [&bytes](const auto& value) { bytes.append(reinterpret_cast<const char*>(&value), sizeof value); };
    put(int32_t{8});  // max_token_length
    float score = 0;
    for (const std::string piece : {"<unk>", "\n<s>\n", "\n</s>\n", " hi"}) {
        put(score);
        put(static_cast<int32_t>(piece.size()));
        bytes += piece;
        score -= 1;
    }
    std::ofstream out(dir + "/llama2c-tokenizer", std::ios::binary);
    out << bytes;
    return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 && argc != 3) {
        std::fprintf(stderr, "usage: make_fuzz_corpus GGUF_DIR [TEXT_PARSERS_DIR]\n");
        return 1;
    }
    write_gguf_seeds(argv[1]);
    if (argc == 3 && !write_llama2c_tokenizer_seed(argv[2])) {
        std::fprintf(stderr, "make_fuzz_corpus: cannot write %s/llama2c-tokenizer\n", argv[2]);
        return 1;
    }
    return 0;
}
