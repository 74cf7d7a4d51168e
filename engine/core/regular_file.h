#pragma once
// Opening a file the user named, for reading, without being caught by what it really is: a
// FIFO would block open() until a writer came, a device such as /dev/zero never ends, and a
// directory reads as nothing. Each is refused by name before a byte is read.
#include <cstdint>
#include <string>

namespace inferscope {

// "a directory", "a FIFO", "a device", "a socket", "a symbolic link" for a stat mode.
const char* special_file_kind(unsigned mode);

// An O_RDONLY|O_CLOEXEC descriptor of the regular file at `path` (the caller closes it); an
// Error naming the path and the problem otherwise. `what` says what the file was meant to be
// ("a model file", "a text file") for the message.
int open_regular_file(const std::string& path, const std::string& what);

// The whole content of the regular file at `path`, refused beyond max_bytes with an Error
// that names both sizes.
std::string read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes);

}  // namespace inferscope
