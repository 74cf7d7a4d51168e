#pragma once
// Anonymous memory aligned to 2 MiB and advised to the kernel as transparent huge pages:
// one TLB entry per 2 MiB instead of per 4 KiB for data streamed over and over (model
// weights, the bandwidth test). Pages are touched lazily, as with any allocation; without
// huge pages from the kernel it is ordinary memory.
#include <cstddef>
#include <cstdint>

namespace inferscope {

class HugePageBuffer {
public:
    static constexpr size_t kPageBytes = size_t{2} << 20;

    HugePageBuffer() = default;
    // Throws CapacityError naming the byte count when the memory cannot be reserved.
    explicit HugePageBuffer(size_t bytes);
    ~HugePageBuffer();
    HugePageBuffer(HugePageBuffer&& other) noexcept;
    HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
    HugePageBuffer(const HugePageBuffer&) = delete;
    HugePageBuffer& operator=(const HugePageBuffer&) = delete;

    uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    // Makes the whole buffer read-only (later writes fault).
    void make_read_only();

private:
    uint8_t* data_ = nullptr;
    size_t size_ = 0;      // as requested
    size_t reserved_ = 0;  // rounded up to whole huge pages
};

}  // namespace inferscope
