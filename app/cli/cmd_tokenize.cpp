// `tokenize`: the token ids (and pieces) of a text; `detokenize`: the text of token ids. Both
// read only the vocabulary, so a vocab-only GGUF of any architecture will do.
#include <cstdio>

#include "app/cli/cli_common.h"

namespace inferscope::cli {

void add_tokenize_command(CLI::App& app) {
    struct Options {
        ModelOptions model;
        std::string prompt;
        bool no_bos = false;
        bool no_parse_special = false;
    };
    auto options = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("tokenize", "token ids of a text");
    add_model_options(*cmd, options->model, false);
    add_prompt_options(*cmd, options->prompt, "text to tokenize", true);
    cmd->add_flag("--no-bos", options->no_bos, "do not add BOS/EOS even if the vocabulary asks for them");
    cmd->add_flag("--no-parse-special", options->no_parse_special, "treat special-token text as plain text");
    cmd->callback([options] {
        const auto tokenizer = load_tokenizer(options->model);
        const Tokenizer& tok = *tokenizer;
        const auto ids = tok.encode(options->prompt, !options->no_bos, !options->no_parse_special);
        if (options->model.json) {
            nlohmann::json pieces = nlohmann::json::array();
            for (TokenId id : ids) pieces.push_back(tok.token_to_piece(id));
            print_json({{"ids", ids}, {"pieces", pieces}});
            return;
        }
        for (TokenId id : ids) std::printf("%6d -> '%s'\n", id, terminal_safe(tok.token_to_piece(id)).c_str());
        std::printf("%zu tokens\n", ids.size());
    });
}

void add_detokenize_command(CLI::App& app) {
    struct Options {
        ModelOptions model;
        std::vector<int64_t> ids;
    };
    auto options = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("detokenize", "text of token ids");
    add_model_options(*cmd, options->model, false);
    cmd->add_option("ids", options->ids, "token ids")->required();
    cmd->callback([options] {
        const auto tokenizer = load_tokenizer(options->model);
        std::vector<TokenId> ids;
        for (int64_t id : options->ids) {
            if (id < 0 || id >= tokenizer->vocab_size()) {
                throw InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                      std::to_string(tokenizer->vocab_size() - 1) + ")");
            }
            ids.push_back(static_cast<TokenId>(id));
        }
        const std::string text = tokenizer->decode(ids);
        if (options->model.json) {
            print_json({{"ids", ids}, {"text", text}});
            return;
        }
        std::printf("%s\n", terminal_safe(text, /*keep_line_breaks=*/true).c_str());
    });
}

}  // namespace inferscope::cli
