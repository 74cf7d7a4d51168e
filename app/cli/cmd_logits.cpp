// `logits`: one teacher-forced pass over the prompt, the top-K logits at every position.
#include <algorithm>
#include <cstdio>
#include <numeric>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/runtime/sampler.h"

namespace inferscope::cli {
namespace {

struct LogitsOptions {
    ModelOptions model;
    std::string prompt;
    int top_k = 10;
};

// The K largest logits as [id, logit] pairs, by logit descending, ties by lower id.
nlohmann::json top_pairs(std::span<const float> logits, int k) {
    std::vector<TokenId> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    const auto keep = std::min(ids.size(), static_cast<size_t>(k));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end(), [&](TokenId a, TokenId b) {
        const float la = logits[static_cast<size_t>(a)];
        const float lb = logits[static_cast<size_t>(b)];
        return la != lb ? la > lb : a < b;
    });
    nlohmann::json pairs = nlohmann::json::array();
    for (size_t i = 0; i < keep; ++i) pairs.push_back({ids[i], logits[static_cast<size_t>(ids[i])]});
    return pairs;
}

void run_logits(const LogitsOptions& o) {
    const auto model = load_model(o.model);
    const std::vector<TokenId> prompt = tokenize_prompt(*model, o.prompt);
    if (prompt.empty()) throw InvalidArgument("the prompt tokenizes to nothing");
    SessionOptions so = session_options(o.model);
    InferenceSession session(model, so, make_backend(o.model, model));
    if (static_cast<int>(prompt.size()) > session.context_size()) {
        throw CapacityError("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size of " +
                            std::to_string(session.context_size()));
    }
    const SeqId seq = session.new_sequence();
    Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], seq, static_cast<int32_t>(i), true});
    const std::span<const float> logits = session.decode(batch);
    require_finite_logits(logits);
    const auto n_vocab = static_cast<size_t>(model->config().n_vocab);

    nlohmann::json positions = nlohmann::json::array();
    for (size_t i = 0; i < prompt.size(); ++i) {
        positions.push_back({{"pos", i}, {"top", top_pairs(logits.subspan(i * n_vocab, n_vocab), o.top_k)}});
    }
    if (o.model.json) {
        print_json({{"prompt_ids", prompt}, {"positions", positions}});
        return;
    }
    const Tokenizer& tok = model->tokenizer();
    for (size_t i = 0; i < prompt.size(); ++i) {
        std::printf("pos %zu  token %d '%s'\n", i, prompt[i], terminal_safe(tok.token_to_piece(prompt[i])).c_str());
        for (const auto& pair : positions[i]["top"]) {
            const auto id = pair[0].get<TokenId>();
            std::printf("    %8d %12.6f  '%s'\n", id, pair[1].get<double>(), terminal_safe(tok.token_to_piece(id)).c_str());
        }
    }
}

}  // namespace

void add_logits_command(CLI::App& app) {
    auto o = std::make_shared<LogitsOptions>();
    CLI::App* cmd = app.add_subcommand("logits", "teacher-forced top-K logits at every prompt position");
    add_model_options(*cmd, o->model, true);
    add_prompt_options(*cmd, o->prompt, "prompt text", true);
    cmd->add_option("--top", o->top_k, "logits to report per position")->check(positive())->capture_default_str();
    cmd->callback([o] { run_logits(*o); });
}

}  // namespace inferscope::cli
