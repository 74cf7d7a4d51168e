// `convert-llama2c`: a llama2.c checkpoint and its tokenizer.bin to a GGUF file.
#include <cstdio>
#include <filesystem>

#include "app/cli/cli_common.h"
#include "engine/convert/llama2c.h"
#include "engine/core/atomic_file.h"
#include "engine/core/regular_file.h"

namespace inferscope::cli {
namespace {

// The converter holds the checkpoint and the model it builds in memory.
constexpr uint64_t kMaxCheckpointBytes = uint64_t{8} << 30;
constexpr uint64_t kMaxTokenizerBytes = uint64_t{64} << 20;

struct ConvertOptions {
    std::string checkpoint;
    std::string tokenizer;
    std::string output;
    std::string name;
    int context_length = 0;
};

void convert(const ConvertOptions& o) {
    require_regular_file_target(o.output);  // before reading gigabytes
    const std::string checkpoint = read_regular_file(o.checkpoint, "a llama2.c checkpoint", kMaxCheckpointBytes);
    const std::string tokenizer = read_regular_file(o.tokenizer, "a llama2.c tokenizer", kMaxTokenizerBytes);
    Llama2cSources sources;
    sources.checkpoint = checkpoint;
    sources.tokenizer = tokenizer;
    sources.checkpoint_name = o.checkpoint;
    sources.tokenizer_name = o.tokenizer;
    sources.model_name = o.name.empty() ? std::filesystem::path(o.checkpoint).stem().string() : o.name;
    sources.context_length = o.context_length;
    const Llama2cConfig config = parse_llama2c_header(checkpoint, o.checkpoint);
    convert_llama2c(sources).write_file(o.output);
    std::fprintf(stderr, "wrote %s: llama, %d layers, dim %d, %d heads (%d KV), vocab %d, context %d, F32 weights%s\n",
                 o.output.c_str(), config.n_layers, config.dim, config.n_heads, config.n_kv_heads, config.vocab_size,
                 o.context_length > 0 ? o.context_length : config.seq_len,
                 config.shared_classifier ? ", output tied to the embeddings" : "");
}

}  // namespace

void add_convert_llama2c_command(CLI::App& app) {
    auto o = std::make_shared<ConvertOptions>();
    CLI::App* cmd = app.add_subcommand("convert-llama2c", "convert a llama2.c checkpoint (.bin) and tokenizer.bin to GGUF");
    cmd->add_option("--checkpoint", o->checkpoint, "llama2.c checkpoint in the legacy format (e.g. stories15M.bin)")
        ->required();
    cmd->add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer.bin for the checkpoint's vocabulary")->required();
    cmd->add_option("-o,--output", o->output, "output .gguf path")->required();
    cmd->add_option("--name", o->name, "general.name to write (default: the checkpoint's file name)");
    cmd->add_option("--ctx-len", o->context_length, "context length to write (default: the checkpoint's seq_len)")
        ->check(CLI::Range(1, 1 << 20));
    cmd->callback([o] { convert(*o); });
}

}  // namespace inferscope::cli
