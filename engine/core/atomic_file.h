#pragma once
// Writing a file so that a reader finds the old content or the whole new content, never a
// part of it: the bytes go to a new temporary beside the target, are synced to disk, and then
// replace the target by rename. Every failed write (a full disk, an I/O error) is an Error that
// names the path and the system's reason, and leaves the old file as it was.
#include <cstddef>
#include <string>
#include <string_view>

namespace inferscope {

// Throws Error when `path` exists and is not a regular file (a device, FIFO, directory,
// socket or symbolic link): writing there would go through to something else, or replace it.
void require_regular_file_target(const std::string& path);

class AtomicFileWriter {
public:
    // Checks the target (require_regular_file_target) and creates the temporary with O_EXCL,
    // so a file or link planted under the temporary's name is never followed.
    explicit AtomicFileWriter(std::string path);
    ~AtomicFileWriter();  // removes the temporary unless committed
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

    void write(const void* data, size_t bytes);
    void write(std::string_view text) { write(text.data(), text.size()); }
    // Syncs the temporary, renames it over the target and syncs the directory.
    void commit();

    const std::string& path() const { return path_; }

private:
    [[noreturn]] void fail(const std::string& what, int error_number);

    std::string path_;
    std::string temp_path_;
    int fd_ = -1;
};

void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace inferscope
