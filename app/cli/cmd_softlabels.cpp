// `softlabels`: distillation's soft labels. The teacher's next-token distribution after a
// prompt at each temperature: the top-k tokens, the mass beyond the argmax, the top/k-th
// ratio, and KL(teacher || student) when a student (a second GGUF or the teacher under a
// quantization scheme) is given. With --url the teacher is a serving engine, as far as its
// top-k log-probabilities show it (k <= 20; the bars are the k tokens' shares).
#include <cstdio>
#include <optional>
#include <string>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "app/cli/quant_cli_common.h"
#include "engine/eval/soft_labels.h"
#include "engine/remote/next_token_logprobs.h"
#include "engine/speculative/speculative.h"

namespace inferscope::cli {
namespace {

struct SoftLabelsOptions {
    ModelOptions model;
    std::string prompt = "Once upon a time";
    int top_k = 5;
    std::vector<double> temperatures = {1.0, 2.0};
    std::string student_path;
    std::string student_scheme;
    std::string url;  // a serving engine as the teacher
    std::string api_key_env;
    std::string served_model;
};

nlohmann::json labels_json(const SoftLabels& s) {
    nlohmann::json top = nlohmann::json::array();
    for (const SoftLabelToken& t : s.top) {
        top.push_back({{"id", t.id}, {"text", t.text}, {"probability", t.probability},
                       {"top_over_this", s.top.front().probability / t.probability}});
    }
    return {{"temperature", s.temperature},
            {"top", top},
            {"argmax_probability", s.top.front().probability},
            {"mass_beyond_argmax", s.mass_beyond_argmax},
            {"top_to_kth_ratio", s.top_to_kth_ratio},
            {"kl_teacher_student", s.kl_teacher_student ? nlohmann::json(*s.kl_teacher_student) : nlohmann::json(nullptr)},
            {"known_mass_at_t1", s.known_mass ? nlohmann::json(*s.known_mass) : nlohmann::json(nullptr)}};
}

void print_labels(const SoftLabels& s) {
    std::printf("T = %g\n", s.temperature);
    std::printf("  %4s %8s  %-16s %12s %10s\n", "rank", "id", "token", "probability", "top/this");
    for (size_t i = 0; i < s.top.size(); ++i) {
        const SoftLabelToken& t = s.top[i];
        const std::string quoted = "'" + terminal_safe(t.text) + "'";
        std::printf("  %4zu %8d  %-16s %12.4f %10.3f\n", i + 1, t.id, quoted.c_str(), t.probability,
                    s.top.front().probability / t.probability);
    }
    std::printf("  mass beyond the argmax %.4f; top/%zu-th ratio %.4f", s.mass_beyond_argmax, s.top.size(), s.top_to_kth_ratio);
    if (s.kl_teacher_student) std::printf("; KL(teacher || student) %.6f nats", *s.kl_teacher_student);
    std::printf("\n\n");
}

// The server's top-k log-probabilities of the token after the prompt, per temperature.
void run_remote_softlabels(const SoftLabelsOptions& o) {
    if (!o.model.model_path.empty() || !o.student_path.empty() || !o.student_scheme.empty()) {
        throw InvalidArgument("--url makes the server the teacher: leave out -m, --student and --student-scheme");
    }
    remote::HttpClient client({o.url, api_key_from_env(o.api_key_env), 60});
    const remote::NextTokenLogprobs read = remote::read_next_token_logprobs(client, o.served_model, o.prompt, o.top_k);
    std::vector<SoftLabels> rows;
    for (double t : o.temperatures) rows.push_back(soft_labels_from_top_logprobs(read.top, t));
    if (o.model.json) {
        nlohmann::json all = nlohmann::json::array();
        for (const SoftLabels& s : rows) all.push_back(labels_json(s));
        print_json({{"url", o.url}, {"top_k", o.top_k}, {"temperatures", all}});
        return;
    }
    std::printf("next token after '%s' on %s (its top %zu log-probabilities)\n\n", o.prompt.c_str(), o.url.c_str(),
                read.top.size());
    for (const SoftLabels& s : rows) print_labels(s);
    std::printf(
        "(the %zu tokens hold %.4f of the distribution at T = 1; the probabilities above are their shares of it,\n"
        " exp(lp / T) over the k: ratios are exact at every T; ids are ranks, the server sends pieces)\n",
        read.top.size(), rows.front().known_mass.value_or(0));
}

void run_softlabels(const SoftLabelsOptions& o) {
    if (!o.url.empty()) return run_remote_softlabels(o);
    const auto teacher_model = load_model(o.model);
    const std::vector<TokenId> prompt = tokenize_prompt(*teacher_model, o.prompt);
    InferenceSession teacher(teacher_model, session_options(o.model), make_backend(o.model, teacher_model));
    const std::vector<float> teacher_logits = next_token_logits(teacher, prompt);
    std::vector<float> student_logits;
    std::string student_label;
    if (!o.student_path.empty() || !o.student_scheme.empty()) {
        const std::string teacher_label = o.model.model_path.empty() ? teacher_model->config().name : o.model.model_path;
        const CompanionModel student_model = companion_model(
            teacher_model, teacher_label, {o.student_path, o.student_scheme, "--student", "--student-scheme"}, o.model.threads);
        student_label = student_model.label;
        check_same_vocabulary(*teacher_model, *student_model.model);
        InferenceSession student(student_model.model, session_options(o.model), make_backend(o.model, student_model.model));
        student_logits = next_token_logits(student, prompt);
    }
    std::vector<SoftLabels> rows;
    for (double t : o.temperatures) rows.push_back(soft_labels(teacher_model->tokenizer(), teacher_logits, t, o.top_k, student_logits));
    if (o.model.json) {
        nlohmann::json all = nlohmann::json::array();
        for (const SoftLabels& s : rows) all.push_back(labels_json(s));
        print_json({{"prompt_ids", prompt},
                    {"student", student_label.empty() ? nlohmann::json(nullptr) : nlohmann::json(student_label)},
                    {"top_k", o.top_k},
                    {"temperatures", all}});
        return;
    }
    const std::string student_note = student_label.empty() ? "" : ", student: " + student_label;
    std::printf("next token after '%s'%s\n\n", o.prompt.c_str(), student_note.c_str());
    for (const SoftLabels& s : rows) print_labels(s);
    std::printf("(p = softmax(logits / T); a ratio at T = 2 is the square root of the same ratio at T = 1)\n");
}

}  // namespace

void add_softlabels_command(CLI::App& app) {
    auto o = std::make_shared<SoftLabelsOptions>();
    CLI::App* cmd = app.add_subcommand(
        "softlabels", "distillation soft labels: the teacher's next-token distribution per temperature, KL to a student");
    add_model_options(*cmd, o->model, /*with_runtime=*/true);
    add_prompt_options(*cmd, o->prompt, "prompt text", false);
    cmd->add_option("--top", o->top_k, "tokens to list per temperature")->check(positive())->capture_default_str();
    cmd->add_option("--temp", o->temperatures, "temperatures (> 0)")->delimiter(',')->capture_default_str();
    cmd->add_option("--student", o->student_path, "student GGUF with the teacher's vocabulary");
    cmd->add_option("--student-scheme", o->student_scheme, "student = the teacher under this quantization scheme");
    cmd->add_option("--url", o->url, "a serving engine as the teacher, through its top log-probabilities (--top 20 at most)");
    cmd->add_option("--api-key-env", o->api_key_env, "with --url: an environment variable holding the API key");
    cmd->add_option("--served-model", o->served_model, "with --url: the model to ask for (default: the server's)");
    cmd->callback([o] { run_softlabels(*o); });
}

}  // namespace inferscope::cli
