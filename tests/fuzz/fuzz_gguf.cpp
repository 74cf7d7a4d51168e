// libFuzzer entry point for model files. Any byte string must end in a typed error or a
// loaded model, never a crash, through each way a file is read:
// - in memory, and on disk both mapped and copied (the three must agree);
// - written back with GgufWriter and read again (the round trip keeps every key and tensor);
// - when it loads as a model, a two-token forward pass with a tiny context, and a tokenizer
//   round trip.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

[[noreturn]] void finding(const std::string& what) {
    std::fprintf(stderr, "fuzz_gguf finding: %s\n", what.c_str());
    std::abort();
}

// What a parse gives: the error text, or the file.
struct Parsed {
    std::optional<GgufFile> file;
    std::string error;
};

Parsed parse_in_memory(const uint8_t* data, size_t size) {
    try {
        return {GgufFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf"), {}};
    } catch (const Error& e) {
        return {std::nullopt, e.what()};
    }
}

// The same bytes as a file on disk (an anonymous memory file), held as `weights` asks.
Parsed parse_on_disk(const uint8_t* data, size_t size, const char* weights) {
    const int fd = memfd_create("fuzz.gguf", 0);
    if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) finding("cannot write the memory file");
    setenv("INFERSCOPE_WEIGHTS", weights, 1);
    Parsed parsed;
    try {
        parsed.file = GgufFile::open("/proc/self/fd/" + std::to_string(fd));
    } catch (const Error& e) {
        parsed.error = e.what();
    }
    close(fd);
    return parsed;
}

// Error texts name the file; the on-disk one is a /proc path, so only the outcome and the
// shape of the header are compared.
void require_same_outcome(const Parsed& memory, const Parsed& disk, const char* weights) {
    if (memory.file.has_value() != disk.file.has_value()) {
        finding(std::string("in memory and on disk (") + weights + ") disagree: " +
                (memory.file ? "only the disk read failed: " + disk.error : "only the in-memory read failed: " + memory.error));
    }
    if (!memory.file) return;
    if (memory.file->metadata().size() != disk.file->metadata().size() ||
        memory.file->tensors().size() != disk.file->tensors().size()) {
        finding(std::string("in memory and on disk (") + weights + ") read different headers");
    }
}

GgufWriter writer_for(const GgufFile& file) {
    GgufWriter writer(file.alignment());
    for (const auto& pair : file.metadata()) writer.set(pair.key, pair.value);
    for (const auto& tensor : file.tensors()) {
        writer.add_tensor(tensor.name, tensor.dims.to_vector(), tensor.type, {tensor.data.begin(), tensor.data.end()});
    }
    return writer;
}

// What the writer makes of a parsed file reads back to the same keys and tensors.
void require_round_trip(const GgufFile& file) {
    const GgufFile again = GgufFile::from_bytes(writer_for(file).to_bytes(), "round-trip.gguf");
    if (again.metadata().size() != file.metadata().size() || again.tensors().size() != file.tensors().size()) {
        finding("the round trip changed the number of keys or tensors");
    }
    // A value is compared exactly through its encoding.
    const auto encoded = [](const std::string& key, const GgufValue& value) {
        GgufWriter one;
        one.set(key, value);
        return one.to_bytes();
    };
    for (const auto& pair : file.metadata()) {
        const GgufValue* value = again.find(pair.key);
        if (!value || encoded(pair.key, *value) != encoded(pair.key, pair.value)) {
            finding("the round trip changed metadata key \"" + pair.key + "\"");
        }
    }
    for (size_t i = 0; i < file.tensors().size(); ++i) {
        const auto& a = file.tensors()[i];
        const auto& b = again.tensors()[i];
        if (a.name != b.name || !(a.dims == b.dims) || a.type != b.type ||
            !std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end())) {
            finding("the round trip changed tensor \"" + a.name + "\"");
        }
    }
}

void run_tiny_forward(const std::shared_ptr<const Model>& model) {
    SessionOptions options;
    options.n_threads = 1;
    options.n_ctx = 8;
    InferenceSession session(model, options);
    const SeqId seq = session.new_sequence();
    const int n_vocab = model->config().n_vocab;
    const std::vector<BatchToken> batch = {{0, seq, 0, false}, {n_vocab > 1 ? 1 : 0, seq, 1, true}};
    const auto logits = session.decode(batch);
    if (logits.size() != static_cast<size_t>(n_vocab)) finding("a forward pass returned the wrong number of logits");
    const auto ids = model->tokenizer().encode("Hi there <s>", true, true);
    for (TokenId id : ids) {
        if (id < 0 || id >= model->tokenizer().vocab_size()) finding("the tokenizer returned an id outside the vocabulary");
    }
    (void)model->tokenizer().decode(ids);
}

}  // namespace
}  // namespace inferscope

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace inferscope;
    Parsed memory = parse_in_memory(data, size);
    const char* weights = (size > 0 && (data[size - 1] & 1)) ? "map" : "copy";
    require_same_outcome(memory, parse_on_disk(data, size, weights), weights);
    if (!memory.file) return 0;
    try {
        require_round_trip(*memory.file);
    } catch (const Error& e) {
        finding(std::string("a file that parsed could not be written back and read: ") + e.what());
    }
    std::shared_ptr<const Model> model;
    try {
        model = Model::from_gguf(std::move(*memory.file));
    } catch (const Error&) {
        return 0;
    }
    try {
        run_tiny_forward(model);
    } catch (const Error&) {
    }
    return 0;
}
