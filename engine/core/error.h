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

// Invalid arguments from a caller (bad flag values, inconsistent shapes in a request).
class InvalidArgument : public Error {
public:
    using Error::Error;
};

}  // namespace inferscope
