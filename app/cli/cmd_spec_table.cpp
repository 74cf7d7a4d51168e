// `spec-table`: the analytic speed-up of speculative decoding for given acceptance rates,
// draft lengths and draft cost ratios (engine/speculative/spec_table.h). No model needed.
#include <cstdio>

#include "app/cli/cli_common.h"
#include "engine/speculative/spec_table.h"

namespace inferscope::cli {
namespace {

struct SpecTableOptions {
    std::vector<double> alphas = {0.3, 0.6, 0.9};
    std::vector<int> gammas = {1, 2, 4, 8};
    std::vector<double> costs = {0.1};
    bool json = false;
};

void run_spec_table(const SpecTableOptions& o) {
    const std::vector<SpecTableRow> rows = speculative_table(o.alphas, o.gammas, o.costs);
    if (o.json) {
        nlohmann::json all = nlohmann::json::array();
        for (const SpecTableRow& r : rows) {
            all.push_back({{"alpha", r.alpha}, {"gamma", r.gamma}, {"cost_ratio", r.cost_ratio},
                           {"expected_tokens_per_verify", r.expected_tokens_per_verify}, {"speedup", r.speedup}});
        }
        print_json({{"rows", all}});
        return;
    }
    std::printf("tokens per verify = (1 - a^(g+1)) / (1 - a); speed-up = that / (g c + 1)\n\n");
    std::printf("| %6s | %5s | %6s | %17s | %8s |\n", "alpha", "gamma", "c", "tokens per verify", "speed-up");
    std::printf("|--------|-------|--------|-------------------|----------|\n");
    for (const SpecTableRow& r : rows) {
        std::printf("| %6.3f | %5d | %6.3f | %17.4f | %7.2fx |\n", r.alpha, r.gamma, r.cost_ratio,
                    r.expected_tokens_per_verify, r.speedup);
    }
}

}  // namespace

void add_spec_table_command(CLI::App& app) {
    auto o = std::make_shared<SpecTableOptions>();
    CLI::App* cmd = app.add_subcommand("spec-table", "analytic speculative-decoding speed-up per acceptance, gamma and draft cost");
    cmd->add_option("--alpha", o->alphas, "acceptance rates within [0, 1]")->delimiter(',')->capture_default_str();
    cmd->add_option("--gamma", o->gammas, "draft tokens per verify (>= 1)")->delimiter(',')->capture_default_str();
    cmd->add_option("--cost", o->costs, "draft step time / target step time")->delimiter(',')->capture_default_str();
    cmd->add_flag("--json", o->json, "machine-readable JSON on stdout");
    cmd->callback([o] { run_spec_table(*o); });
}

}  // namespace inferscope::cli
