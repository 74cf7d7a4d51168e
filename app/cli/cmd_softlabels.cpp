// `softlabels`: distillation's soft labels. The teacher's next-token distribution after a
// prompt at each temperature: the top-k tokens, the mass beyond the argmax, the top/k-th
// ratio, and KL(teacher || student) when a student (a second GGUF or the teacher under a
// quantization scheme) is given.
#include <cstdio>
#include <optional>
#include <string>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "app/cli/quant_cli_common.h"
#include "engine/eval/soft_labels.h"
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
            {"kl_teacher_student", s.kl_teacher_student ? nlohmann::json(*s.kl_teacher_student) : nlohmann::json(nullptr)}};
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

void run_softlabels(const SoftLabelsOptions& o) {
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
    cmd->callback([o] { run_softlabels(*o); });
}

}  // namespace inferscope::cli
