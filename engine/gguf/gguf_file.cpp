#include "engine/gguf/gguf_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <string_view>
#include <utility>

#include <xxhash.h>

#include "engine/core/error.h"
#include "engine/gguf/file_bytes.h"

namespace inferscope {
namespace {

constexpr uint32_t kMaxArrayNesting = 8;
constexpr uint64_t kMaxDimension = uint64_t{1} << 62;

// Sequential little-endian reads over the file with bounds checks; every failure reports
// the offset where the problem starts.
class Cursor {
public:
    Cursor(std::span<const uint8_t> bytes, const std::string& path) : bytes_(bytes), path_(path) {}

    uint64_t offset() const { return offset_; }
    uint64_t remaining() const { return bytes_.size() - offset_; }

    [[noreturn]] void fail(const std::string& problem) const { fail_at(offset_, problem); }
    [[noreturn]] void fail_at(uint64_t offset, const std::string& problem) const {
        throw GgufError(path_, offset, problem);
    }

    template <typename T>
    T read(const char* what) {
        if (remaining() < sizeof(T)) {
            fail("file ends inside " + std::string(what) + " (needs " + std::to_string(sizeof(T)) +
                 " bytes, " + std::to_string(remaining()) + " left): the file is truncated");
        }
        T value;
        std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
        offset_ += sizeof(T);
        return value;
    }

    std::string read_string(const char* what) {
        const uint64_t start = offset_;
        const auto length = read<uint64_t>(what);
        if (length > remaining()) {
            fail_at(start, std::string(what) + " claims " + std::to_string(length) + " bytes but only " +
                               std::to_string(remaining()) + " remain in the file");
        }
        std::string s(reinterpret_cast<const char*>(bytes_.data() + offset_), length);
        offset_ += length;
        return s;
    }

    std::vector<uint8_t> read_bytes(uint64_t count, const char* what) {
        if (count > remaining()) {
            fail("file ends inside " + std::string(what) + " (needs " + std::to_string(count) + " bytes, " +
                 std::to_string(remaining()) + " left): the file is truncated");
        }
        std::vector<uint8_t> out(bytes_.begin() + static_cast<std::ptrdiff_t>(offset_),
                                 bytes_.begin() + static_cast<std::ptrdiff_t>(offset_ + count));
        offset_ += count;
        return out;
    }

    // Checks that `count` items of at least `min_item_bytes` each can still fit in the file
    // before anything is allocated for them.
    void require_items(uint64_t count, uint64_t min_item_bytes, const std::string& what) const {
        if (min_item_bytes != 0 && count > remaining() / min_item_bytes) {
            fail(what + " count " + std::to_string(count) + " cannot fit in the " + std::to_string(remaining()) +
                 " bytes left in the file");
        }
    }

    void seek(uint64_t offset) { offset_ = offset; }

private:
    std::span<const uint8_t> bytes_;
    const std::string& path_;
    uint64_t offset_ = 0;
};

uint64_t min_encoded_size(GgufType type) {
    if (type == GgufType::STRING) return 8;   // the length alone
    if (type == GgufType::ARRAY) return 12;   // element type and length
    return gguf_scalar_bytes(type);
}

GgufType read_type(Cursor& cur, const char* what) {
    const uint64_t at = cur.offset();
    const auto id = cur.read<uint32_t>(what);
    if (!gguf_type_is_valid(id)) cur.fail_at(at, std::string("invalid ") + what + " " + std::to_string(id) + " (valid: 0..12)");
    return static_cast<GgufType>(id);
}

GgufValue read_value(Cursor& cur, GgufType type, uint32_t depth);

// Scalars are taken as stored (bools checked to be 0 or 1), so an array holds what it
// occupies in the file; strings and nested arrays one by one.
GgufArray read_array_elements(Cursor& cur, GgufType element_type, uint64_t count, uint32_t depth) {
    if (element_type == GgufType::STRING) {
        std::vector<std::string> strings;
        strings.reserve(count);
        for (uint64_t i = 0; i < count; ++i) strings.push_back(cur.read_string("a string array element"));
        return GgufArray::of_strings(std::move(strings));
    }
    if (element_type == GgufType::ARRAY) {
        std::vector<GgufValue> arrays;
        // An element value is far larger than the 12 bytes it may take in the file: grow as read.
        arrays.reserve(std::min<uint64_t>(count, 1024));
        for (uint64_t i = 0; i < count; ++i) arrays.push_back(read_value(cur, element_type, depth + 1));
        return GgufArray::of_arrays(std::move(arrays));
    }
    const uint64_t at = cur.offset();
    std::vector<uint8_t> bytes = cur.read_bytes(count * gguf_scalar_bytes(element_type), "an array's elements");
    if (element_type == GgufType::BOOL) {
        for (size_t i = 0; i < bytes.size(); ++i) {
            if (bytes[i] > 1) cur.fail_at(at + i, "bool value " + std::to_string(bytes[i]) + " is neither 0 nor 1");
        }
    }
    return GgufArray::of_scalar_bytes(element_type, std::move(bytes));
}

GgufValue read_value(Cursor& cur, GgufType type, uint32_t depth) {
    switch (type) {
        case GgufType::UINT8: return GgufValue::u8(cur.read<uint8_t>("a uint8 value"));
        case GgufType::INT8: return GgufValue::i8(cur.read<int8_t>("an int8 value"));
        case GgufType::UINT16: return GgufValue::u16(cur.read<uint16_t>("a uint16 value"));
        case GgufType::INT16: return GgufValue::i16(cur.read<int16_t>("an int16 value"));
        case GgufType::UINT32: return GgufValue::u32(cur.read<uint32_t>("a uint32 value"));
        case GgufType::INT32: return GgufValue::i32(cur.read<int32_t>("an int32 value"));
        case GgufType::UINT64: return GgufValue::u64(cur.read<uint64_t>("a uint64 value"));
        case GgufType::INT64: return GgufValue::i64(cur.read<int64_t>("an int64 value"));
        case GgufType::FLOAT32: return GgufValue::f32(cur.read<float>("a float32 value"));
        case GgufType::FLOAT64: return GgufValue::f64(cur.read<double>("a float64 value"));
        case GgufType::BOOL: {
            const uint64_t at = cur.offset();
            const auto b = cur.read<uint8_t>("a bool value");
            if (b > 1) cur.fail_at(at, "bool value " + std::to_string(b) + " is neither 0 nor 1");
            return GgufValue::boolean(b != 0);
        }
        case GgufType::STRING: return GgufValue::string(cur.read_string("a string value"));
        case GgufType::ARRAY: {
            if (depth >= kMaxArrayNesting) {
                cur.fail("arrays nested deeper than " + std::to_string(kMaxArrayNesting) + " levels");
            }
            const GgufType element_type = read_type(cur, "array element type");
            const auto count = cur.read<uint64_t>("an array length");
            cur.require_items(count, min_encoded_size(element_type), "array element");
            return GgufValue::array(read_array_elements(cur, element_type, count, depth));
        }
    }
    cur.fail("unreachable value type");
}

bool is_power_of_two(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

uint64_t align_up(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

// One tensor info: name, dimensions (validated against overflow), type, aligned offset.
GgufTensorInfo read_tensor_info(Cursor& cur, uint64_t index, uint32_t alignment) {
    const uint64_t at = cur.offset();
    GgufTensorInfo info;
    info.entry_offset = at;
    info.name = cur.read_string("a tensor name");
    if (info.name.empty()) cur.fail_at(at, "tensor #" + std::to_string(index) + " has an empty name");
    const std::string label = "tensor \"" + info.name + "\"";
    const uint64_t dims_at = cur.offset();
    const auto n_dims = cur.read<uint32_t>("a tensor dimension count");
    if (n_dims == 0 || n_dims > kGgufMaxDims) {
        cur.fail_at(dims_at, label + " has " + std::to_string(n_dims) + " dimensions (allowed: 1.." +
                                 std::to_string(kGgufMaxDims) + ")");
    }
    info.element_count = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t dim_at = cur.offset();
        const auto dim = cur.read<uint64_t>("a tensor dimension");
        if (dim == 0 || dim > kMaxDimension) {
            cur.fail_at(dim_at, label + " dimension " + std::to_string(d) + " is " + std::to_string(dim));
        }
        if (info.element_count > std::numeric_limits<uint64_t>::max() / dim || info.element_count * dim > kMaxDimension) {
            cur.fail_at(dim_at, label + " element count overflows (shape too large)");
        }
        info.element_count *= dim;
        info.dims.push_back(dim);
    }
    const uint64_t type_at = cur.offset();
    const auto type_id = cur.read<uint32_t>("a tensor type");
    const auto traits = ggml_type_traits(type_id);
    if (!traits) cur.fail_at(type_at, label + " has unknown tensor type id " + std::to_string(type_id));
    info.type = traits->type;
    if (info.dims[0] % traits->block_elements != 0) {
        cur.fail_at(type_at, label + " row length " + std::to_string(info.dims[0]) + " is not a multiple of the " +
                                 std::string(traits->name) + " block size " + std::to_string(traits->block_elements));
    }
    const uint64_t blocks = info.element_count / traits->block_elements;
    if (blocks > kMaxDimension / traits->block_bytes) {
        cur.fail_at(type_at, label + " byte count overflows (" + std::to_string(info.element_count) + " " +
                                 std::string(traits->name) + " elements)");
    }
    info.byte_count = blocks * traits->block_bytes;
    const uint64_t offset_at = cur.offset();
    info.offset = cur.read<uint64_t>("a tensor data offset");
    if (info.offset % alignment != 0) {
        cur.fail_at(offset_at, label + " data offset " + std::to_string(info.offset) + " is not a multiple of the alignment " +
                                   std::to_string(alignment));
    }
    return info;
}

void check_no_overlap(const Cursor& cur, const std::vector<GgufTensorInfo>& tensors, uint64_t data_offset) {
    std::vector<const GgufTensorInfo*> by_offset;
    for (const auto& info : tensors) by_offset.push_back(&info);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const auto* prev = by_offset[i - 1];
        if (prev->offset + prev->byte_count > by_offset[i]->offset) {
            cur.fail_at(data_offset + by_offset[i]->offset,
                        "tensor \"" + by_offset[i]->name + "\" overlaps tensor \"" + prev->name + "\"");
        }
    }
}

// Positions of `items` sorted by their `name` member (ties in file order), and the first
// position in file order whose name an earlier item already has.
template <typename Item>
std::optional<size_t> sort_by_name_finding_duplicate(const std::vector<Item>& items, std::string Item::*name, std::vector<uint32_t>& positions) {
    positions.resize(items.size());
    for (size_t i = 0; i < items.size(); ++i) positions[i] = static_cast<uint32_t>(i);
    std::stable_sort(positions.begin(), positions.end(), [&](uint32_t a, uint32_t b) { return items[a].*name < items[b].*name; });
    std::optional<size_t> duplicate;
    for (size_t i = 1; i < positions.size(); ++i) {
        if (items[positions[i]].*name == items[positions[i - 1]].*name && (!duplicate || positions[i] < *duplicate)) {
            duplicate = positions[i];
        }
    }
    return duplicate;
}

template <typename Item>
const Item* find_by_name(const std::vector<Item>& items, std::string Item::*name, const std::vector<uint32_t>& positions,
                         std::string_view wanted) {
    const auto it = std::lower_bound(positions.begin(), positions.end(), wanted,
                                     [&](uint32_t position, std::string_view w) { return items[position].*name < w; });
    return it == positions.end() || items[*it].*name != wanted ? nullptr : &items[*it];
}

}  // namespace

void TensorDims::push_back(uint64_t extent) {
    if (count_ == kGgufMaxDims) throw std::length_error("a tensor has at most " + std::to_string(kGgufMaxDims) + " dimensions");
    extents_[count_++] = extent;
}

bool TensorDims::operator==(const TensorDims& other) const { return std::equal(begin(), end(), other.begin(), other.end()); }

uint64_t GgufTensorInfo::rows() const {
    uint64_t r = 1;
    for (size_t i = 1; i < dims.size(); ++i) r *= dims[i];
    return r;
}

std::string GgufTensorInfo::shape_string() const {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(dims[i]);
    }
    return s + "]";
}

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::string& path) {
    GgufFile file;
    file.path_ = path;
    file.held_ = std::make_unique<FileBytes>(path);
    file.bytes_ = file.held_->bytes();
    file.parse();
    return file;
}

bool GgufFile::changed_on_disk() const { return held_ != nullptr && held_->changed_on_disk(); }

std::string GgufFile::content_fingerprint() const {
    constexpr size_t kEdgeBytes = size_t{1} << 20;
    XXH3_state_t* state = XXH3_createState();
    if (state == nullptr) throw std::bad_alloc();
    XXH3_64bits_reset(state);
    const uint64_t size = bytes_.size();
    XXH3_64bits_update(state, &size, sizeof size);
    const size_t head = std::min(kEdgeBytes, bytes_.size());
    XXH3_64bits_update(state, bytes_.data(), head);
    const size_t tail = std::min(kEdgeBytes, bytes_.size() - head);
    XXH3_64bits_update(state, bytes_.data() + bytes_.size() - tail, tail);
    const XXH64_hash_t hash = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    return hex;
}

std::string GgufFile::holding_name() const {
    return held_ != nullptr ? file_holding_name(held_->holding()) : "in memory";
}

GgufFile GgufFile::from_bytes(std::vector<uint8_t> bytes, const std::string& name) {
    GgufFile file;
    file.path_ = name;
    file.owned_bytes_ = std::move(bytes);
    file.bytes_ = file.owned_bytes_;
    file.parse();
    return file;
}

void GgufFile::parse() {
    Cursor cur(bytes_, path_);
    const auto magic = cur.read<uint32_t>("the magic number");
    if (magic != kGgufMagic) {
        char shown[5] = {};
        std::memcpy(shown, &magic, 4);
        for (char& c : shown) {
            if (c != 0 && (c < 32 || c > 126)) c = '?';
        }
        cur.fail_at(0, "not a GGUF file (magic is \"" + std::string(shown) + "\", expected \"GGUF\")");
    }
    version_ = cur.read<uint32_t>("the version");
    if (version_ == 1) cur.fail_at(4, "GGUF version 1 is not supported (only versions 2 and 3); re-convert the model");
    if (version_ != 2 && version_ != 3) {
        cur.fail_at(4, "unsupported GGUF version " + std::to_string(version_) + " (supported: 2, 3)");
    }
    const auto tensor_count = cur.read<uint64_t>("the tensor count");
    const auto kv_count = cur.read<uint64_t>("the metadata count");
    // A key-value pair needs at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at
    // least 8 (name length) + 4 (dims) + 8 (one dim) + 4 (type) + 8 (offset).
    cur.require_items(kv_count, 13, "metadata");
    cur.require_items(tensor_count, 32, "tensor");
    // Entries are indexed by 32-bit positions.
    for (const auto& [count, what] : {std::pair{kv_count, "metadata"}, std::pair{tensor_count, "tensor"}}) {
        if (count > std::numeric_limits<uint32_t>::max()) {
            cur.fail(std::string(what) + " count " + std::to_string(count) + " is past the " +
                     std::to_string(std::numeric_limits<uint32_t>::max()) + " entries supported");
        }
    }

    metadata_.reserve(kv_count);
    for (uint64_t i = 0; i < kv_count; ++i) {
        const uint64_t at = cur.offset();
        std::string key = cur.read_string("a metadata key");
        if (key.empty()) cur.fail_at(at, "metadata key #" + std::to_string(i) + " is empty");
        const GgufType type = read_type(cur, "metadata value type");
        GgufValue value = read_value(cur, type, 0);
        metadata_.push_back({std::move(key), std::move(value), at});
    }
    if (const auto duplicate = sort_by_name_finding_duplicate(metadata_, &GgufKeyValue::key, metadata_by_key_)) {
        cur.fail_at(metadata_[*duplicate].offset, "duplicate metadata key \"" + metadata_[*duplicate].key + "\"");
    }

    if (const GgufValue* alignment = find("general.alignment")) {
        if (alignment->type() != GgufType::UINT32 || !is_power_of_two(alignment->as_u64())) {
            cur.fail("general.alignment must be a power-of-two uint32, got " + std::string(gguf_type_name(alignment->type())) +
                     " " + alignment->to_display_string());
        }
        alignment_ = static_cast<uint32_t>(alignment->as_u64());
    }

    tensors_.reserve(tensor_count);
    for (uint64_t i = 0; i < tensor_count; ++i) tensors_.push_back(read_tensor_info(cur, i, alignment_));
    if (const auto duplicate = sort_by_name_finding_duplicate(tensors_, &GgufTensorInfo::name, tensors_by_name_)) {
        cur.fail_at(tensors_[*duplicate].entry_offset, "duplicate tensor name \"" + tensors_[*duplicate].name + "\"");
    }

    data_offset_ = align_up(cur.offset(), alignment_);
    if (!tensors_.empty() && data_offset_ > bytes_.size()) {
        cur.fail("the tensor data section would start at " + std::to_string(data_offset_) + ", past the end of the " +
                 std::to_string(bytes_.size()) + "-byte file: the file is truncated");
    }
    const uint64_t data_size = tensors_.empty() ? 0 : bytes_.size() - data_offset_;
    for (auto& info : tensors_) {
        if (info.offset > data_size || info.byte_count > data_size - info.offset) {
            cur.fail_at(data_offset_ + std::min(info.offset, data_size),
                        "tensor \"" + info.name + "\" data [" + std::to_string(info.offset) + ", +" +
                            std::to_string(info.byte_count) + ") lies outside the " + std::to_string(data_size) +
                            "-byte data section: the file is truncated or corrupt");
        }
        info.data = bytes_.subspan(data_offset_ + info.offset, info.byte_count);
    }

    check_no_overlap(cur, tensors_, data_offset_);
}

const GgufValue* GgufFile::find(const std::string& key) const {
    const GgufKeyValue* pair = find_by_name(metadata_, &GgufKeyValue::key, metadata_by_key_, key);
    return pair ? &pair->value : nullptr;
}

uint64_t GgufFile::metadata_offset(const std::string& key) const {
    const GgufKeyValue* pair = find_by_name(metadata_, &GgufKeyValue::key, metadata_by_key_, key);
    // A missing key is reported at the start of the metadata section, after the 24-byte header.
    return pair ? pair->offset : 24;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
    return find_by_name(tensors_, &GgufTensorInfo::name, tensors_by_name_, name);
}

void GgufFile::fail_key(const std::string& key, const std::string& problem) const {
    throw GgufError(path_, metadata_offset(key), "metadata key \"" + key + "\": " + problem);
}

namespace {
template <typename F>
decltype(auto) convert_or_fail(const GgufFile& file, const std::string& key, const GgufValue& value, F&& convert) {
    try {
        return convert(value);
    } catch (const InvalidArgument& e) {
        throw GgufError(file.path(), file.metadata_offset(key), "metadata key \"" + key + "\": " + e.what());
    }
}
}  // namespace

std::string GgufFile::get_string(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) fail_key(key, "required but missing");
    return convert_or_fail(*this, key, *v, [](const GgufValue& x) { return x.as_string(); });
}

std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
    const GgufValue* v = find(key);
    return v ? convert_or_fail(*this, key, *v, [](const GgufValue& x) { return x.as_string(); }) : fallback;
}

uint64_t GgufFile::get_u64(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) fail_key(key, "required but missing");
    return convert_or_fail(*this, key, *v, [](const GgufValue& x) { return x.as_u64(); });
}

uint64_t GgufFile::get_u64(const std::string& key, uint64_t fallback) const {
    const GgufValue* v = find(key);
    return v ? convert_or_fail(*this, key, *v, [](const GgufValue& x) { return x.as_u64(); }) : fallback;
}

double GgufFile::get_f64(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) fail_key(key, "required but missing");
    return convert_or_fail(*this, key, *v, [](const GgufValue& x) { return x.as_f64(); });
}

double GgufFile::get_f64(const std::string& key, double fallback) const {
    const GgufValue* v = find(key);
    return v ? convert_or_fail(*this, key, *v, [](const GgufValue& x) { return x.as_f64(); }) : fallback;
}

bool GgufFile::get_bool(const std::string& key, bool fallback) const {
    const GgufValue* v = find(key);
    return v ? convert_or_fail(*this, key, *v, [](const GgufValue& x) { return x.as_bool(); }) : fallback;
}

const GgufArray& GgufFile::get_array(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) fail_key(key, "required but missing");
    return convert_or_fail(*this, key, *v, [](const GgufValue& x) -> const GgufArray& { return x.as_array(); });
}

}  // namespace inferscope
