#pragma once
// Conversion of llama2.c checkpoints (the TinyStories "tinyllamas" models and anything trained
// with llama2.c's train.py) to GGUF: the legacy checkpoint (export version 0) and the
// tokenizer.bin that llama2.c's tokenizer.py writes.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/gguf/gguf_writer.h"

namespace inferscope {

// The checkpoint's header: seven int32 values, then the F32 weights.
struct Llama2cConfig {
    int dim = 0;
    int hidden_dim = 0;
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int vocab_size = 0;
    int seq_len = 0;
    bool shared_classifier = true;  // a negative vocab_size in the file means a separate output matrix
};

// Reads and checks the header: positive bounded sizes, heads that divide the width, and a
// byte count that matches the weights the header implies. Error naming `source` otherwise.
Llama2cConfig parse_llama2c_header(std::string_view checkpoint, const std::string& source);

struct Llama2cSources {
    std::string_view checkpoint;      // the whole .bin checkpoint
    std::string_view tokenizer;       // the whole tokenizer.bin
    std::string checkpoint_name;      // for messages
    std::string tokenizer_name;       // for messages
    std::string model_name;           // written as general.name
    int context_length = 0;           // 0: the checkpoint's seq_len
};

// The GGUF of a llama-architecture model with a SentencePiece ("llama") tokenizer: weights
// copied unchanged (llama2.c rotates adjacent pairs, as GGUF's llama does), a shared classifier
// written as tied embeddings, tokens 0/1/2 as <unk>/<s>/</s>, <0xHH> pieces as byte tokens and
// spaces as U+2581. Error naming the file and entry for anything malformed.
GgufWriter convert_llama2c(const Llama2cSources& sources);

}  // namespace inferscope
