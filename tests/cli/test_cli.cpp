// inferscope-cli end to end: JSON outputs, and bad input that must end with a clear
// message and exit code 1.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_writer.h"
#include "support/cli_runner.h"
#include "support/test_paths.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;

using testing::run_cli;
using testing::run_command;
using RunResult = testing::CliRunResult;

class CliTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("inferscope-cli-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    std::string write_tiny(const std::string& name, const std::string& arch = "llama") const {
        build_synthetic_model(testing::tiny_spec(arch)).write_file(path(name));
        return path(name);
    }
    fs::path dir_;
};

void expect_failure(const RunResult& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST_F(CliTest, MissingFileDirectoryAndTruncatedFile) {
    expect_failure(run_cli("info -m " + path("absent.gguf")), "absent.gguf: no such file");
    expect_failure(run_cli("generate -m " + dir_.string() + " -n 2"), "is a directory");
    const std::string model = write_tiny("full.gguf");
    fs::resize_file(model, fs::file_size(model) / 2);
    expect_failure(run_cli("generate -m " + model + " -n 2"), "truncated");
}

TEST_F(CliTest, FifosDevicesAndDirectoriesAreRefusedByNameWithoutWaiting) {
    const std::string fifo = path("model.fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Opening a FIFO for reading would block until a writer came; the run must end instead.
    expect_failure(run_cli("info -m " + fifo), fifo + ": is a FIFO, not a model file");
    const std::string model = write_tiny("tiny.gguf");
    expect_failure(run_cli("perplexity -m " + model + " -f " + dir_.string()), dir_.string() + ": is a directory, not a text file");
    expect_failure(run_cli("perplexity -m " + model + " -f /dev/zero"), "/dev/zero: is a device, not a text file");
    expect_failure(run_cli("perplexity -m " + model + " -f " + fifo), "is a FIFO, not a text file");
    expect_failure(run_cli("info -m /dev/zero"), "/dev/zero: is a device, not a model file");
    expect_failure(run_cli("generate -m " + model + " -n 2 --steps /proc/version"), "/proc/version");
}

// An output that is a symbolic link or a device is refused (before any work) and left as it is.
TEST_F(CliTest, OutputsThatAreLinksOrDevicesAreRefusedAndLeftAsTheyAre) {
    const std::string victim = path("victim.txt");
    std::ofstream(victim) << "keep me";
    fs::create_symlink(victim, path("link.gguf"));
    expect_failure(run_cli("make-model --preset tiny-qwen2 -o " + path("link.gguf")), "is a symbolic link, not a regular file");
    std::ifstream in(victim);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "keep me");
    EXPECT_TRUE(fs::is_symlink(path("link.gguf")));
    ASSERT_EQ(run_cli("make-model --preset tiny-qwen2 -o " + path("out.gguf")).exit_code, 0);
    const RunResult quantized = run_cli("quantize -m " + path("out.gguf") + " -s q8_0 -o /dev/full");
    expect_failure(quantized, "/dev/full: is a device, not a regular file");
    EXPECT_EQ(quantized.err.find("quantize q8_0"), std::string::npos) << "refused only after quantizing: " << quantized.err;
}

TEST_F(CliTest, NonFiniteAndOutOfRangeArgumentsAreRefusedByName) {
    const std::string model = write_tiny("tiny.gguf");
    const std::string generate = "generate -m " + model + " -n 2 ";
    expect_failure(run_cli(generate + "--temp nan"), "--temp: nan is not a finite number");
    expect_failure(run_cli(generate + "--temp inf"), "--temp: inf is not a finite number");
    expect_failure(run_cli(generate + "--top-p nan"), "--top-p: nan is not a finite number");
    expect_failure(run_cli(generate + "--top-p 2"), "--top-p: 2 is outside [0, 1]");
    expect_failure(run_cli(generate + "--top-k -5"), "top-k must be >= 0");
    expect_failure(run_cli(generate + "-t -5"), "--threads: -5 is negative; must be >= 0");
    expect_failure(run_cli(generate + "-t 100000"), "100000 threads: at most");
    expect_failure(run_cli(generate + "--bogus"), "The following argument was not expected: --bogus");
    expect_failure(run_cli("budget --gpu-gib 8,nan"), "--gpu-gib: nan is not a finite number");
    expect_failure(run_cli("serve-sim --arrival poisson --rate 0"), "--rate: 0 must be > 0");
}

TEST_F(CliTest, ControlCharactersFromTheFileNeverReachTheTerminal) {
    GgufWriter w = build_synthetic_model(testing::tiny_spec("llama"));
    w.set("general.name", GgufValue::string("evil\x1b]0;title\x07\x1b[2J name\xc2\x9b"));
    w.write_file(path("evil.gguf"));
    const RunResult r = run_cli("info -m " + path("evil.gguf"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
    EXPECT_EQ(r.out.find('\x07'), std::string::npos);
    EXPECT_NE(r.out.find("name:            evil\\x1b]0;title\\x07\\x1b[2J name\\u009b"), std::string::npos) << r.out;
    const RunResult json = run_cli("info --json -m " + path("evil.gguf"));
    EXPECT_EQ(nlohmann::json::parse(json.out)["name"], "evil\x1b]0;title\x07\x1b[2J name\xc2\x9b") << "JSON keeps the exact text";
}

TEST_F(CliTest, APromptFromAFileIsThePromptAndNotBothAtOnce) {
    const std::string model = write_tiny("tiny.gguf");
    std::ofstream(path("prompt.txt"), std::ios::binary) << "hello world, once more";
    const RunResult from_text = run_cli("tokenize --json -m " + model + " -p 'hello world, once more'");
    const RunResult from_file = run_cli("tokenize --json -m " + model + " -f " + path("prompt.txt"));
    ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
    EXPECT_EQ(nlohmann::json::parse(from_file.out)["ids"], nlohmann::json::parse(from_text.out)["ids"]);
    const RunResult generated = run_cli("generate --json -m " + model + " -f " + path("prompt.txt") + " -n 1 --temp 0");
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
    EXPECT_EQ(nlohmann::json::parse(generated.out)["prompt_ids"], nlohmann::json::parse(from_file.out)["ids"]);
    expect_failure(run_cli("tokenize -m " + model + " -p hi -f " + path("prompt.txt")), "--prompt excludes --file");
    expect_failure(run_cli("tokenize -m " + model), "-p,--prompt or -f,--file is required");
    expect_failure(run_cli("generate -m " + model + " -f " + dir_.string()), "is a directory, not a text file");
}

TEST_F(CliTest, ASpecialTokenIdOutsideTheVocabularyIsIgnoredWithAWarning) {
    GgufWriter w = build_synthetic_model(testing::tiny_spec("llama"));
    w.set("tokenizer.ggml.eos_token_id", GgufValue::u32(70000));
    w.set("tokenizer.ggml.eot_token_id", GgufValue::u32(4294967295u));  // the usual "unset" marker: no warning
    w.write_file(path("bad-eos.gguf"));
    const RunResult r = run_cli("info -m " + path("bad-eos.gguf"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: tokenizer.ggml.eos_token_id = 70000 is outside the vocabulary of"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("eot_token_id"), std::string::npos) << r.err;
    size_t warnings = 0;
    for (size_t at = r.err.find("warning:"); at != std::string::npos; at = r.err.find("warning:", at + 1)) ++warnings;
    EXPECT_EQ(warnings, 1u) << "once";
}

TEST_F(CliTest, SizesAreCheckedBeforeAnythingIsAllocated) {
    const std::string model = write_tiny("tiny.gguf");
    expect_failure(run_cli("generate -m " + model + " -n 2 -c 1000000000"), "context size 1000000000: at most 16777216 tokens");
    expect_failure(run_cli("batch-bench -m " + model + " -B 100000"), "100000 sequences: at most 4096 decode together");
    expect_failure(run_cli("batch-bench -m " + model + " -c 100000"), "-c 100000 plus -n 32 tokens exceed the model's context of");
    expect_failure(run_cli("serve-sim --max 1000000000"), "--prompt 16 plus --max 1000000000 tokens");
}

TEST_F(CliTest, UnsupportedArchitectureListsTheSupportedOnes) {
    GgufWriter w;
    w.set("general.architecture", GgufValue::string("mamba"));
    w.write_file(path("mamba.gguf"));
    expect_failure(run_cli("info -m " + path("mamba.gguf")), "unsupported architecture \"mamba\" (supported: llama, qwen2, qwen3, gemma3)");
}

TEST_F(CliTest, UnsupportedTensorTypeListsTheSupportedOnes) {
    // A valid tiny model whose q projection claims to be IQ2_XXS (66 bytes per 256 weights).
    GgufWriter w = build_synthetic_model(testing::tiny_spec("llama"));
    const std::vector<uint8_t> bytes = w.to_bytes();
    GgufFile original = GgufFile::from_bytes(bytes, "tiny");
    GgufWriter patched;
    for (const auto& kv : original.metadata()) patched.set(kv.key, kv.value);
    for (const auto& t : original.tensors()) {
        if (t.name == "blk.0.attn_q.weight") {
            patched.add_tensor(t.name, {256, 16}, GgmlType::IQ2_XXS, std::vector<uint8_t>(66 * 16));
        } else {
            patched.add_tensor(t.name, t.dims.to_vector(), t.type, std::vector<uint8_t>(t.data.begin(), t.data.end()));
        }
    }
    patched.write_file(path("iq2.gguf"));
    const RunResult r = run_cli("generate -m " + path("iq2.gguf") + " -n 2");
    expect_failure(r, "blk.0.attn_q.weight");
    EXPECT_NE(r.err.find("IQ2_XXS"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("supported: F32, F16, Q4_0"), std::string::npos) << r.err;
}

TEST_F(CliTest, PromptLongerThanTheContext) {
    const std::string model = write_tiny("tiny.gguf");
    expect_failure(run_cli("generate -m " + model + " -c 8 -n 4 -p 'a prompt that is clearly longer than eight tokens'"),
                   "more than the context size of 8");
}

TEST_F(CliTest, BadFlagsExitWithOne) {
    EXPECT_EQ(run_cli("generate --no-such-flag").exit_code, 1);
    // An empty argument where a command takes no positional one is an error, not a hang.
    const std::string model = write_tiny("tiny.gguf");
    for (const char* command : {"generate -n 2", "tokenize -p hi", "logits -p hi", "spec -n 2"}) {
        const RunResult r = run_command("timeout 120 " + testing::cli_path() + " " + command + " -m " + model + " ''");
        EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
        EXPECT_NE(r.err.find("not expected"), std::string::npos) << command << ": " << r.err;
    }
    EXPECT_EQ(run_cli("").exit_code, 1);
    EXPECT_EQ(run_cli("generate --kv-type f8").exit_code, 1);
}

TEST_F(CliTest, GenerateJsonHasIdsTextAndTimings) {
    const std::string model = write_tiny("tiny.gguf");
    const std::string steps = path("steps.jsonl");
    const RunResult r = run_cli("generate -m " + model + " -p 'hello world' -n 6 --temp 0 --ignore-eos --json --steps " + steps);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["generated_ids"].size(), 6u);
    EXPECT_FALSE(j["prompt_ids"].empty());
    EXPECT_TRUE(j["text"].is_string());
    for (const char* key : {"prefill_ms", "decode_ms_per_token", "ttft_ms", "tokens_per_s"}) {
        EXPECT_TRUE(j["timings"][key].is_number()) << key;
    }
    EXPECT_EQ(j["timings"]["warm_up_ms"], 0.0) << "the CPU has nothing to warm up";
    EXPECT_EQ(r.err.find("warm-up"), std::string::npos) << r.err;
    std::ifstream lines(steps);
    std::string line;
    int count = 0;
    while (std::getline(lines, line)) {
        const auto e = nlohmann::json::parse(line);
        EXPECT_EQ(e["phase"], count == 0 ? "prefill" : "decode");
        EXPECT_GT(e["kv_bytes_reserved"].get<uint64_t>(), 0u);
        ++count;
    }
    EXPECT_EQ(count, 7);  // one prefill step, then one decode step per generated token

    // the same greedy tokens without a KV cache
    const RunResult nc = run_cli("generate -m " + model + " -p 'hello world' -n 6 --temp 0 --ignore-eos --json --no-cache");
    ASSERT_EQ(nc.exit_code, 0) << nc.err;
    EXPECT_EQ(nlohmann::json::parse(nc.out)["generated_ids"], j["generated_ids"]);
}

TEST_F(CliTest, InfoTokenizeAndLogitsJson) {
    const std::string model = write_tiny("tiny.gguf", "qwen2");
    const auto info = nlohmann::json::parse(run_cli("info --json -m " + model).out);
    EXPECT_EQ(info["architecture"], "qwen2");
    EXPECT_EQ(info["n_layer"], 2);
    EXPECT_EQ(info["kv_bytes_per_token"]["f16"], 2 * 2 * 2 * 16 * 2);
    EXPECT_TRUE(info["synthetic"].get<bool>());
    EXPECT_FALSE(info["tensors"].empty());

    const auto tok = nlohmann::json::parse(run_cli("tokenize --json -m " + model + " -p 'ab' --no-bos").out);
    EXPECT_EQ(tok["ids"], nlohmann::json::array({97, 98}));  // byte-level vocabulary: token id = byte

    const auto logits = nlohmann::json::parse(run_cli("logits --json -m " + model + " -p 'abc' --top 3").out);
    ASSERT_EQ(logits["positions"].size(), logits["prompt_ids"].size());
    for (const auto& p : logits["positions"]) {
        ASSERT_EQ(p["top"].size(), 3u);
        EXPECT_GE(p["top"][0][1].get<double>(), p["top"][1][1].get<double>());
    }
}

TEST_F(CliTest, NonFiniteWeightsStopWithAnErrorInEveryCommand) {
    SyntheticModelSpec spec = testing::tiny_spec("llama");
    spec.weight_std = std::numeric_limits<float>::quiet_NaN();
    build_synthetic_model(spec).write_file(path("nan.gguf"));
    const std::string model = " -m " + path("nan.gguf");
    expect_failure(run_cli("generate" + model + " -p hello -n 4"), "non-finite logit");
    expect_failure(run_cli("logits" + model + " -p hello"), "non-finite logit");
    std::ofstream(path("text.txt")) << std::string(4000, 'a');
    expect_failure(run_cli("perplexity" + model + " -f " + path("text.txt") + " -c 64"), "non-finite logit");
}

TEST_F(CliTest, TokenTextIsEscapedOnTheTerminal) {
    const std::string model = write_tiny("tiny.gguf");
    // The byte-level vocabulary has a token for the ESC byte; printed raw it would drive the terminal.
    const RunResult r = run_cli("tokenize -m " + model + " --no-bos -p \"$(printf 'a\\033[31m')\"");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("'\\x1b'"), std::string::npos) << r.out;
}

TEST_F(CliTest, GeneratedTextIsEscapedOnATerminalAndPassedRawIntoAPipe) {
    const std::string model = write_tiny("tiny.gguf");
    const std::string script = path("generate.sh");
    std::ofstream(script) << "exec " << testing::cli_path() << " generate -m " << model
                          << " -p \"$(printf 'a\\033[31mb')\" -n 2 --temp 0\n";
    // util-linux's script(1) runs the command on a pseudo-terminal.
    const RunResult on_terminal = testing::run_command("script -qec 'sh " + script + "' /dev/null");
    ASSERT_EQ(on_terminal.exit_code, 0) << on_terminal.out << on_terminal.err;
    EXPECT_EQ(on_terminal.out.find('\x1b'), std::string::npos) << on_terminal.out;
    EXPECT_NE(on_terminal.out.find("a\\x1b[31mb"), std::string::npos) << on_terminal.out;
    const RunResult piped = testing::run_command("sh " + script);
    ASSERT_EQ(piped.exit_code, 0) << piped.err;
    EXPECT_NE(piped.out.find("a\x1b[31mb"), std::string::npos) << piped.out;
}

TEST_F(CliTest, ConvertLlama2cWritesAModelThatLoads) {
    INFERSCOPE_REQUIRE_SHARED_FILE("llama2c/stories260K.bin");
    INFERSCOPE_REQUIRE_SHARED_FILE("llama2c/tok512.bin");
    const std::string checkpoint = testing::shared_model("llama2c/stories260K.bin").string();
    const std::string tokenizer = testing::shared_model("llama2c/tok512.bin").string();
    const RunResult r = run_cli("convert-llama2c --checkpoint " + checkpoint + " --tokenizer " + tokenizer + " --ctx-len 256 -o " +
                                path("s.gguf"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto info = nlohmann::json::parse(run_cli("info --json -m " + path("s.gguf")).out);
    EXPECT_EQ(info["name"], "stories260K");  // the checkpoint's file name
    EXPECT_EQ(info["context_length"], 256);
    EXPECT_EQ(info["parameters"], 260032);
    expect_failure(run_cli("convert-llama2c --checkpoint " + tokenizer + " --tokenizer " + tokenizer + " -o " + path("t.gguf")),
                   "llama2.c header field");
    EXPECT_FALSE(fs::exists(path("t.gguf")));
}

TEST_F(CliTest, BuiltInDefaultModelNeedsNoFile) {
    const RunResult r = run_cli("generate -n 4 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("built-in stories260K"), std::string::npos) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["generated_ids"].size(), 4u);

    // the trained default writes a story
    const RunResult story = run_cli("generate -p 'Once upon a time' -n 24 --temp 0 -t 1");
    ASSERT_EQ(story.exit_code, 0) << story.err;
    EXPECT_NE(story.out.find("Once upon a time, there was a little girl"), std::string::npos) << story.out;
}

TEST_F(CliTest, BuiltInModelsByName) {
    const auto synthetic = nlohmann::json::parse(run_cli("info --json -m builtin:synthetic").out);
    EXPECT_TRUE(synthetic["synthetic"].get<bool>());
    const auto stories = nlohmann::json::parse(run_cli("info --json -m builtin:stories260K").out);
    EXPECT_FALSE(stories["synthetic"].get<bool>());
    EXPECT_EQ(stories["n_vocab"], 512);
    EXPECT_EQ(stories["tokenizer"]["kind"], "llama (SentencePiece)");

    const RunResult unknown = run_cli("info -m builtin:stories15M");
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_NE(unknown.err.find("error: no built-in model is called \"builtin:stories15M\" (there are builtin:stories260K, "
                               "builtin:synthetic)"),
              std::string::npos)
        << unknown.err;
}

TEST_F(CliTest, MakeModelWritesAFileThatLoads) {
    const RunResult made = run_cli("make-model --preset tiny-qwen2 --dtype f16 --outlier-dims 3,7 -o " + path("m.gguf"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const auto info = nlohmann::json::parse(run_cli("info --json -m " + path("m.gguf")).out);
    EXPECT_EQ(info["architecture"], "qwen2");
    EXPECT_EQ(info["n_embd"], 64);
    bool saw_f16 = false;
    for (const auto& t : info["tensors"]) saw_f16 |= t["type"] == "F16";
    EXPECT_TRUE(saw_f16);
    expect_failure(run_cli("make-model --preset nope -o " + path("x.gguf")), "unknown preset");
}

TEST_F(CliTest, MakeModelCopiesARealTokenizer) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-qwen2-rebuilt.gguf");
    const std::string vocab = testing::shared_model("vocab/ggml-vocab-qwen2-rebuilt.gguf").string();
    const RunResult made = run_cli("make-model --preset tiny-qwen2 --vocab " + vocab + " -o " + path("q.gguf"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const auto info = nlohmann::json::parse(run_cli("info --json -m " + path("q.gguf")).out);
    EXPECT_EQ(info["n_vocab"], 151936);
    EXPECT_EQ(info["tokenizer"]["pre"], "qwen2");
    // Qwen2's tokenizer splits digits one by one
    const auto tok = nlohmann::json::parse(run_cli("tokenize --json -m " + path("q.gguf") + " -p 'Hello world, 123'").out);
    EXPECT_EQ(tok["ids"], nlohmann::json::array({9707, 1879, 11, 220, 16, 17, 18}));
}

TEST_F(CliTest, BatchBenchReportsEveryBatchSizeAndTheKnee) {
    const std::string model = write_tiny("tiny.gguf");
    const RunResult r = run_cli("batch-bench --json -m " + model + " -B 1,2,4 -c 8 -n 4 -r 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["rows"].size(), 3u);
    EXPECT_EQ(j["rows"][0]["runs"], 2);
    EXPECT_TRUE(j["rows"][0]["S_TG_stddev"].is_number());
    EXPECT_EQ(j["rows"][2]["B"], 4);
    EXPECT_EQ(j["rows"][2]["N_KV"], 4 * (8 + 4));
    EXPECT_DOUBLE_EQ(j["rows"][0]["speedup"].get<double>(), 1.0);
    EXPECT_TRUE(j["knee_batch"].is_number_integer());
    // Progress goes to stderr, a line per batch size when stderr is not a terminal.
    for (const char* line : {"batch-bench: batch sizes 1/3 B=1\n", "batch-bench: batch sizes 2/3 B=2\n",
                             "batch-bench: batch sizes 3/3 B=4\n"}) {
        EXPECT_NE(r.err.find(line), std::string::npos) << line << " in:\n" << r.err;
    }
}

TEST_F(CliTest, ServeSimPrintsBothPoliciesForTheTrace) {
    const std::string model = write_tiny("tiny.gguf");
    const RunResult r = run_cli("serve-sim --json -m " + model + " --requests 12 --median 4 --max 20 --prompt 6 --slots 4 --real");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["runs"].size(), 4u);  // static and continuous, simulated and real
    for (const auto& run : j["runs"]) {
        EXPECT_EQ(run["requests"], 12);
        EXPECT_GT(run["throughput_tokens_per_s"].get<double>(), 0.0);
    }
    // the same trace produces the same tokens whichever way it is served
    EXPECT_EQ(j["runs"][0]["generated_tokens"], j["runs"][3]["generated_tokens"]);
    EXPECT_EQ(j["runs"][0]["padding_slot_steps"].get<int>() > 0, true);  // static pads
    EXPECT_EQ(j["runs"][2]["padding_slot_steps"], 0);                     // continuous does not
}

TEST_F(CliTest, PerplexityJsonOnSharedModel) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const std::string text = path("text.txt");
    {
        std::ofstream out(text);
        for (int i = 0; i < 40; ++i) out << "Once upon a time there was a little girl who liked to play in the park. ";
    }
    const RunResult r = run_cli("perplexity --json -m " + testing::shared_model("stories260K.gguf").string() + " -f " + text +
                                " -c 128");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_GT(j["ppl"].get<double>(), 1.0);
    EXPECT_GT(j["n_tokens_scored"].get<int>(), 0);
    EXPECT_NE(r.err.find("[1]"), std::string::npos);  // progress on stderr
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

TEST(CliBudget, JsonRowsFollowTheFormula) {
    const auto r = testing::run_cli("budget --model 7b --weights fp16,int4 --gpu-gib 8,24 --users 8 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.at("rows").size(), 4u);
    const auto& fp16_24 = j.at("rows").at(1);
    EXPECT_EQ(fp16_24.at("weights"), "fp16");
    EXPECT_EQ(fp16_24.at("memory_gib"), 24.0);
    EXPECT_EQ(fp16_24.at("max_resident_tokens"), 77508);
    EXPECT_EQ(fp16_24.at("tokens_per_user"), 77508 / 8);
    EXPECT_EQ(j.at("rows").at(0).at("max_resident_tokens"), 0);  // 14 GB of weights on 8 GiB
}

TEST(CliBudget, UnknownPresetAndMissingFileAreErrors) {
    const auto unknown = testing::run_cli("budget --model 3b");
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_NE(unknown.err.find("unknown model preset '3b'"), std::string::npos) << unknown.err;
    const auto loaded = testing::run_cli("budget --model loaded");
    EXPECT_EQ(loaded.exit_code, 1);
    EXPECT_NE(loaded.err.find("-m FILE"), std::string::npos) << loaded.err;
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

TEST(CliVocabOnly, TokenizeAndDetokenizeAVocabularyWithoutWeights) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-gpt-2.gguf");
    const std::string vocab = testing::shared_model("vocab/ggml-vocab-gpt-2.gguf").string();
    const testing::CliRunResult ids = testing::run_cli("tokenize --json -m " + vocab + " -p 'Hello world, 2024!'");
    ASSERT_EQ(ids.exit_code, 0) << ids.err;
    const auto j = nlohmann::json::parse(ids.out);
    EXPECT_EQ(j["ids"], nlohmann::json({15496, 995, 11, 48609, 0}));
    const testing::CliRunResult text = testing::run_cli("detokenize --json -m " + vocab + " 15496 995 11 48609 0");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_EQ(nlohmann::json::parse(text.out)["text"], "Hello world, 2024!");
    const testing::CliRunResult bad = testing::run_cli("detokenize -m " + vocab + " 50257");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("token id 50257 is outside the vocabulary (0..50256)"), std::string::npos) << bad.err;
}

TEST(CliModernModels, InfoNamesTheSlidingWindowLayers) {
    INFERSCOPE_REQUIRE_SHARED_FILE("modern/gemma3-tiny.gguf");
    const testing::CliRunResult r =
        testing::run_cli("info --json -m " + testing::shared_model("modern/gemma3-tiny.gguf").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["sliding_window"]["window_tokens"], 8);
    EXPECT_EQ(j["sliding_window"]["local_layers"], nlohmann::json({0, 1, 3, 4}));
    EXPECT_EQ(j["ffn_activation"], "geglu (tanh)");
    EXPECT_TRUE(j["qk_norm"].get<bool>());
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

// The GPU bundle (scripts/gpu-bundle) runs the suites on another machine, where the CLI is not at
// the path this build baked in: INFERSCOPE_CLI names the program every end-to-end test runs.
TEST(CliRunner, InferscopeCliNamesTheProgramTheTestsRun) {
    const char* before = std::getenv("INFERSCOPE_CLI");
    const std::string saved = before != nullptr ? before : "";
    const fs::path stand_in = fs::temp_directory_path() / ("inferscope-cli-stand-in-" + std::to_string(::getpid()));
    std::ofstream(stand_in) << "#!/bin/sh\necho \"stand-in $*\"\n";
    fs::permissions(stand_in, fs::perms::owner_all);
    ::setenv("INFERSCOPE_CLI", stand_in.c_str(), 1);
    const testing::CliRunResult r = testing::run_cli("info -m x.gguf");
    if (before != nullptr) {
        ::setenv("INFERSCOPE_CLI", saved.c_str(), 1);
    } else {
        ::unsetenv("INFERSCOPE_CLI");
    }
    fs::remove(stand_in);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "stand-in info -m x.gguf\n");
    EXPECT_EQ(testing::cli_path(), before != nullptr && *before != '\0' ? saved : std::string(INFERSCOPE_CLI_PATH));
}

}  // namespace
}  // namespace inferscope
