// `budget`: how many tokens of context fit next to the weights, per device size, model and
// weight format, and how many per user.
#include <cstdio>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/plan/memory_budget.h"

namespace inferscope::cli {
namespace {

struct BudgetOptions {
    ModelOptions model;
    std::vector<double> memory_gib = {8, 16, 24};
    std::vector<std::string> models = {"0.5b", "7b", "13b", "70b"};
    std::vector<std::string> weights = {"fp16", "int8", "int4"};
    std::string kv_dtype = "f16";
    double reserve_gib = 1.5;
    int users = 1;
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<BudgetModel> chosen_models(const BudgetOptions& o) {
    std::vector<BudgetModel> models;
    for (const std::string& name : o.models) {
        if (name != "loaded") {
            models.push_back(budget_model_preset(name));
            continue;
        }
        if (o.model.model_path.empty()) throw InvalidArgument("--model loaded needs a model file: -m FILE");
        const auto model = load_model(o.model);
        models.push_back(budget_model_from_config(model->config().name, static_cast<double>(model->parameter_count()),
                                                  model->config()));
    }
    return models;
}

nlohmann::json row_json(const BudgetRow& r) {
    return {{"model", r.model},
            {"weights", r.weights},
            {"memory_gib", r.memory_gib},
            {"weight_bytes", r.weight_bytes},
            {"reserve_bytes", r.reserve_bytes},
            {"kv_bytes_per_token", r.kv_bytes_per_token},
            {"kv_budget_bytes", r.kv_budget_bytes},
            {"max_resident_tokens", r.max_resident_tokens},
            {"tokens_per_user", r.tokens_per_user}};
}

void print_row(const BudgetRow& r) {
    std::printf("| %-22s | %-6s | %6.0f | %10.2f | %14.0f | %13.2f | %12lld | %12lld |\n", r.model.c_str(), r.weights.c_str(),
                r.memory_gib, r.weight_bytes / kGiB, r.kv_bytes_per_token, r.kv_budget_bytes / kGiB,
                static_cast<long long>(r.max_resident_tokens), static_cast<long long>(r.tokens_per_user));
}

void run_budget(const BudgetOptions& o) {
    std::vector<BudgetRow> rows;
    for (const BudgetModel& model : chosen_models(o)) {
        for (const std::string& weights : o.weights) {
            for (double gib : o.memory_gib) {
                BudgetQuery q;
                q.memory_gib = gib;
                q.reserve_gib = o.reserve_gib;
                q.weights = weights;
                q.kv_dtype = o.kv_dtype;
                q.users = o.users;
                rows.push_back(plan_memory_budget(model, q));
            }
        }
    }
    if (o.model.json) {
        nlohmann::json all = nlohmann::json::array();
        for (const BudgetRow& r : rows) all.push_back(row_json(r));
        print_json({{"kv_dtype", o.kv_dtype}, {"reserve_gib", o.reserve_gib}, {"users", o.users}, {"rows", all}});
        return;
    }
    std::printf("weights + %.2f GiB reserve + KV (%s) x resident tokens <= memory; %d user(s)\n\n", o.reserve_gib,
                o.kv_dtype.c_str(), o.users);
    std::printf("| %-22s | %-6s | %6s | %10s | %14s | %13s | %12s | %12s |\n", "model", "format", "GiB", "weights GiB",
                "KV bytes/token", "KV room GiB", "max tokens", "tokens/user");
    std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(24, '-').c_str(), std::string(8, '-').c_str(),
                std::string(8, '-').c_str(), std::string(12, '-').c_str(), std::string(16, '-').c_str(),
                std::string(15, '-').c_str(), std::string(14, '-').c_str(), std::string(14, '-').c_str());
    for (const BudgetRow& r : rows) print_row(r);
    std::printf("\nmax tokens 0: the weights and the reserve alone exceed the memory (negative KV room).\n");
}

}  // namespace

void add_budget_command(CLI::App& app) {
    auto o = std::make_shared<BudgetOptions>();
    CLI::App* cmd = app.add_subcommand("budget", "memory budget: resident tokens of context per device size, model and format");
    // -m without --model: here --model names presets, as the preset table does.
    cmd->add_option("-m", o->model.model_path, "GGUF model file, the 'loaded' preset");
    cmd->add_flag("--json", o->model.json, "machine-readable JSON on stdout");
    cmd->add_option("--gpu-gib", o->memory_gib, "device memory sizes in GiB")->check(positive())->delimiter(',')->capture_default_str();
    cmd->add_option("--model", o->models, "presets 0.5b, 7b, 13b, 70b, or loaded (the -m file)")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--weights", o->weights, "weight formats: fp16, int8, int4 (4.125 bits)")->delimiter(',')->capture_default_str();
    cmd->add_option("--kv-dtype", o->kv_dtype, "KV cache element type")->check(CLI::IsMember({"f16", "q8_0"}))->capture_default_str();
    cmd->add_option("--reserve-gib", o->reserve_gib, "runtime reserve in GiB")->check(non_negative())->capture_default_str();
    cmd->add_option("--users", o->users, "users sharing the resident tokens")->check(positive())->capture_default_str();
    cmd->callback([o] { run_budget(*o); });
}

}  // namespace inferscope::cli
