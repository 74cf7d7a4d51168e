// Writes seed inputs for fuzz_gguf: small valid models of every architecture and several types.
#include <cstdio>
#include <string>

#include "support/tiny_models.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_fuzz_corpus DIR\n");
        return 1;
    }
    const std::string dir = argv[1];
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
    return 0;
}
