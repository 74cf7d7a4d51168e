// `perplexity`: llama-perplexity's method and number on a text file.
#include <cstdio>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/eval/perplexity.h"

namespace inferscope::cli {
namespace {

struct PerplexityCliOptions {
    ModelOptions model;
    std::string text_path;
    int n_batch = 512;
};

void run_perplexity(PerplexityCliOptions o) {
    if (o.model.ctx == 0) o.model.ctx = 512;
    const auto model = load_model(o.model);
    // As llama-perplexity: tokenize once with BOS and without parsing special tokens.
    const std::vector<TokenId> tokens = model->tokenizer().encode(read_text_file(o.text_path), true, false);
    InferenceSession session(model, session_options(o.model), make_backend(o.model, model));
    PerplexityOptions p;
    p.n_ctx = o.model.ctx;
    p.n_batch = o.n_batch;
    std::fprintf(stderr, "perplexity: %zu tokens, %zu chunks of %d, %s\n", tokens.size(),
                 tokens.size() / static_cast<size_t>(p.n_ctx), p.n_ctx, session.backend().name().c_str());
    p.progress = stderr_progress("perplexity");
    const PerplexityResult r = compute_perplexity(session, tokens, p);
    // The running PPL after each chunk, as llama-perplexity prints it.
    for (size_t c = 0; c < r.running_ppl.size(); ++c) {
        std::fprintf(stderr, "[%zu]%.4f%s", c + 1, r.running_ppl[c], c + 1 == r.running_ppl.size() ? "\n" : ",");
    }
    if (o.model.json) {
        print_json({{"ppl", r.ppl},
                    {"ppl_stderr", r.ppl_stderr},
                    {"n_tokens_scored", r.n_tokens_scored},
                    {"n_chunks", r.n_chunks},
                    {"n_ctx", p.n_ctx},
                    {"running_ppl", r.running_ppl}});
        return;
    }
    std::printf("PPL = %.4f +/- %.5f  (%lld tokens scored, %d chunks of %d)\n", r.ppl, r.ppl_stderr,
                static_cast<long long>(r.n_tokens_scored), r.n_chunks, p.n_ctx);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
    auto o = std::make_shared<PerplexityCliOptions>();
    CLI::App* cmd = app.add_subcommand("perplexity", "perplexity of a text, computed as llama-perplexity does");
    add_model_options(*cmd, o->model, true);
    cmd->add_option("-f,--file", o->text_path, "text file")->required();
    cmd->add_option("-b,--batch-size", o->n_batch, "tokens per forward step")->check(positive())->capture_default_str();
    cmd->callback([o] { run_perplexity(*o); });
}

}  // namespace inferscope::cli
