#include "engine/core/huge_page_buffer.h"

#include <sys/mman.h>

#include <string>
#include <utility>

#include "engine/core/error.h"

namespace inferscope {

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    reserved_ = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
    void* mapping = ::mmap(nullptr, reserved_ + kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) throw CapacityError("cannot reserve " + std::to_string(bytes) + " bytes of memory");
    // Keep the 2 MiB-aligned part, so that each of its huge pages can be a real one.
    auto* base = static_cast<uint8_t*>(mapping);
    auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kPageBytes - 1) & ~uintptr_t{kPageBytes - 1});
    if (aligned > base) ::munmap(base, static_cast<size_t>(aligned - base));
    const size_t tail = static_cast<size_t>(base + reserved_ + kPageBytes - (aligned + reserved_));
    if (tail > 0) ::munmap(aligned + reserved_, tail);
    ::madvise(aligned, reserved_, MADV_HUGEPAGE);  // advice only: refused, the memory still works
    data_ = aligned;
}

HugePageBuffer::~HugePageBuffer() {
    if (data_ != nullptr) ::munmap(data_, reserved_);
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), reserved_(std::exchange(other.reserved_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
    if (this != &other) {
        if (data_ != nullptr) ::munmap(data_, reserved_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        reserved_ = std::exchange(other.reserved_, 0);
    }
    return *this;
}

void HugePageBuffer::make_read_only() {
    if (data_ != nullptr) ::mprotect(data_, reserved_, PROT_READ);
}

}  // namespace inferscope
