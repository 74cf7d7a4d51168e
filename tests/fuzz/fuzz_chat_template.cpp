// libFuzzer entry point: any text given as a chat template (which comes from a model file)
// must render or end in a TemplateError, never crash, hang or exhaust memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/chat/chat_template.h"
#include "engine/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    inferscope::chat::ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(
        R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},)"
        R"({"role":"assistant","content":"Hello!"},{"role":"user","content":"What is 2+2?"}])");
    inputs.add_generation_prompt = true;
    inputs.bos_token = "<s>";
    inputs.eos_token = "</s>";
    try {
        (void)inferscope::chat::ChatTemplate(std::string(reinterpret_cast<const char*>(data), size)).render(inputs);
    } catch (const inferscope::TemplateError&) {
    }
    return 0;
}
