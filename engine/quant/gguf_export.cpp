#include "engine/quant/gguf_export.h"

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"

namespace inferscope {
namespace {

// ggml's quantization version of the block layouts we write (QK_K super-blocks, Q8_0 with
// fp16 scales); llama-quantize stores the same number.
constexpr uint32_t kGgmlQuantizationVersion = 2;

// The bytes to write for one tensor: the model's replaced weight when there is one, the
// file's bytes otherwise.
const WeightMatrix* replaced_matrix(const Model& model, const GgufTensorInfo& tensor) {
    const WeightMatrix* m = model.find_matrix(tensor.name);
    if (m == nullptr || m->data == tensor.data.data()) return nullptr;
    return m;
}

}  // namespace

uint32_t llama_file_type(const QuantScheme& scheme) {
    if (scheme.family != SchemeFamily::Gguf) {
        throw InvalidArgument(scheme.name() + " has no GGUF type; only q8_0, q4_0, q4_k, q6_k, iq4_nl and "
                              "iq4_xs can be written as GGUF");
    }
    if (const auto file_type = llama_file_type(scheme.gguf_type)) return *file_type;
    throw InvalidArgument("no llama.cpp file type for " + scheme.name());
}

GgufWriter export_quantized_gguf(const Model& model, const QuantScheme& scheme) {
    const uint32_t file_type = llama_file_type(scheme);
    const GgufFile& file = model.file();
    GgufWriter writer(file.alignment());
    for (const GgufKeyValue& kv : file.metadata()) writer.set(kv.key, kv.value);
    writer.set("general.file_type", GgufValue::u32(file_type));
    writer.set("general.quantization_version", GgufValue::u32(kGgmlQuantizationVersion));
    for (const GgufTensorInfo& tensor : file.tensors()) {
        const WeightMatrix* m = replaced_matrix(model, tensor);
        if (m == nullptr) {
            writer.add_tensor(tensor.name, tensor.dims.to_vector(), tensor.type, {tensor.data.begin(), tensor.data.end()});
            continue;
        }
        if (m->type != scheme.gguf_type) {
            throw InvalidArgument("cannot write \"" + tensor.name + "\" as " + scheme.name() + ": the model holds it as " +
                                  std::string(ggml_type_name(m->type)));
        }
        writer.add_tensor(tensor.name, tensor.dims.to_vector(), m->type, {m->data, m->data + m->bytes()});
    }
    return writer;
}

}  // namespace inferscope
