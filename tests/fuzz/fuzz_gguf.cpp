// libFuzzer entry point: any byte string given to the GGUF reader and, when it parses, to
// the model loader must end in a typed error or a loaded model, never a crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto file = inferscope::GgufFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
        (void)inferscope::Model::from_gguf(std::move(file));
    } catch (const inferscope::Error&) {
    }
    return 0;
}
