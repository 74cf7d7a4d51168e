// `tokenize`: the token ids (and pieces) of a text.
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
    cmd->add_option("-p,--prompt", options->prompt, "text to tokenize")->required();
    cmd->add_flag("--no-bos", options->no_bos, "do not add BOS/EOS even if the vocabulary asks for them");
    cmd->add_flag("--no-parse-special", options->no_parse_special, "treat special-token text as plain text");
    cmd->callback([options] {
        const auto model = load_model(options->model);
        const Tokenizer& tok = model->tokenizer();
        const auto ids = tok.encode(options->prompt, !options->no_bos, !options->no_parse_special);
        if (options->model.json) {
            nlohmann::json pieces = nlohmann::json::array();
            for (TokenId id : ids) pieces.push_back(tok.token_to_piece(id));
            print_json({{"ids", ids}, {"pieces", pieces}});
            return;
        }
        for (TokenId id : ids) std::printf("%6d -> '%s'\n", id, tok.token_to_piece(id).c_str());
        std::printf("%zu tokens\n", ids.size());
    });
}

}  // namespace inferscope::cli
