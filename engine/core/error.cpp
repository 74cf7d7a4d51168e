#include "engine/core/error.h"

namespace inferscope {
namespace {
std::string gguf_message(const std::string& path, uint64_t offset, const std::string& problem) {
    std::string message;
    message.reserve(path.size() + problem.size() + 48);
    message.append(path).append(": at byte offset ").append(std::to_string(offset)).append(": ").append(problem);
    return message;
}
}  // namespace

GgufError::GgufError(std::string path, uint64_t offset, const std::string& problem)
    : Error(gguf_message(path, offset, problem)), path_(std::move(path)), offset_(offset), problem_(problem) {}

TemplateError::TemplateError(const std::string& problem, int line)
    : Error(line > 0 ? "template line " + std::to_string(line) + ": " + problem : problem), line_(line) {}

}  // namespace inferscope
