#pragma once
// Error types shared by the engine. Every failure that a user can cause (a bad file, an
// unsupported model, a prompt that does not fit) is reported as one of these, with a
// message that names the problem; nothing user-caused aborts the process.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace inferscope {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A model file that is malformed, truncated or inconsistent. The message names the file,
// the byte offset where the problem was found and the problem itself.
class GgufError : public Error {
public:
    GgufError(std::string path, uint64_t offset, const std::string& problem);
    const std::string& path() const { return path_; }
    uint64_t offset() const { return offset_; }
    const std::string& problem() const { return problem_; }

private:
    std::string path_;
    uint64_t offset_;
    std::string problem_;
};

// A well-formed file that uses something the engine does not implement (an architecture,
// a tensor type, a tokenizer). The message lists what is supported.
class UnsupportedError : public Error {
public:
    using Error::Error;
};

// A request that cannot be served with the current limits: a prompt longer than the
// context, a KV pool that is full, a sequence id that does not exist.
class CapacityError : public Error {
public:
    using Error::Error;
};

// A compute device that stopped working: a GPU its driver gave up after a fault or a hang.
// Nothing more runs on the backend that used it; another backend (the CPU) can run the model.
class DeviceLostError : public Error {
public:
    using Error::Error;
};

// Invalid arguments from a caller (bad flag values, inconsistent shapes in a request).
class InvalidArgument : public Error {
public:
    using Error::Error;
};

// What a remote server sent that cannot be used (a malformed metrics page or event stream),
// or a request to it that failed (HTTP status, lost connection, timeout); the message names it.
class RemoteError : public Error {
public:
    using Error::Error;
};

// A chat template that cannot be rendered: malformed syntax, a feature the template engine
// does not implement, or an error while rendering (an undefined value used, a type mismatch).
// The message names the problem and the template line (line() is 0 when there is none, as for
// the template's own raise_exception(msg), whose message is exactly msg).
class TemplateError : public Error {
public:
    explicit TemplateError(const std::string& problem, int line = 0);
    int line() const { return line_; }

private:
    int line_;
};

}  // namespace inferscope
