#include "engine/remote/prometheus.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include "engine/core/error.h"

namespace inferscope::remote {
namespace {

[[noreturn]] void fail(size_t line, const std::string& problem) {
    throw RemoteError("metrics line " + std::to_string(line) + ": " + problem);
}

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool blank(char c) { return c == ' ' || c == '\t'; }

// A cursor over one line; every read names the line when it fails.
class LineReader {
public:
    LineReader(std::string_view text, size_t line) : text_(text), line_(line) {}

    bool done() const { return at_ == text_.size(); }
    char peek() const { return done() ? '\0' : text_[at_]; }
    void skip_blanks() {
        while (!done() && blank(text_[at_])) ++at_;
    }
    bool take(char c) {
        if (peek() != c) return false;
        ++at_;
        return true;
    }
    // A metric name, or a label name when `colons` is false.
    std::string name(bool colons, const char* what) {
        const size_t begin = at_;
        if (done() || !name_start(text_[at_]) || (!colons && text_[at_] == ':')) fail(line_, std::string("expected ") + what);
        while (!done() && name_char(text_[at_]) && (colons || text_[at_] != ':')) ++at_;
        return std::string(text_.substr(begin, at_ - begin));
    }
    // A quoted label value with the escapes \\, \" and \n.
    std::string quoted() {
        if (!take('"')) fail(line_, "expected a quoted label value");
        std::string out;
        while (true) {
            if (done()) fail(line_, "unterminated label value");
            const char c = text_[at_++];
            if (c == '"') return out;
            if (c != '\\') {
                out.push_back(c);
                continue;
            }
            const char escaped = peek();
            if (escaped != '\\' && escaped != '"' && escaped != 'n') fail(line_, "unknown escape in a label value");
            out.push_back(escaped == 'n' ? '\n' : escaped);
            ++at_;
        }
    }
    std::string_view word() {
        const size_t begin = at_;
        while (!done() && !blank(text_[at_])) ++at_;
        return text_.substr(begin, at_ - begin);
    }
    std::string_view rest() {
        const std::string_view r = text_.substr(at_);
        at_ = text_.size();
        return r;
    }
    size_t line() const { return line_; }

private:
    std::string_view text_;
    size_t at_ = 0;
    size_t line_;
};

// A sample value: a decimal or exponent float, NaN, +Inf or -Inf (any case, as Go parses them).
std::optional<double> parse_value(std::string_view word) {
    if (word.empty()) return std::nullopt;
    std::string lower(word);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (lower == "+inf" || lower == "inf") return std::numeric_limits<double>::infinity();
    if (lower == "-inf") return -std::numeric_limits<double>::infinity();
    const std::string_view digits = word.front() == '+' ? word.substr(1) : word;
    double value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size() || std::isnan(value) || std::isinf(value)) {
        return std::nullopt;
    }
    return value;
}

std::string unescape_help(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '\\' || text[i + 1] == 'n')) {
            out.push_back(text[i + 1] == 'n' ? '\n' : '\\');
            ++i;
        } else {
            out.push_back(text[i]);
        }
    }
    return out;
}

std::optional<MetricType> type_named(std::string_view word) {
    if (word == "counter") return MetricType::Counter;
    if (word == "gauge") return MetricType::Gauge;
    if (word == "histogram") return MetricType::Histogram;
    if (word == "summary") return MetricType::Summary;
    if (word == "untyped" || word == "unknown") return MetricType::Untyped;
    return std::nullopt;
}

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The suffixes a sample of each family type may add to the family's name.
bool suffix_belongs(MetricType type, std::string_view suffix) {
    switch (type) {
        case MetricType::Histogram: return suffix == "_bucket" || suffix == "_sum" || suffix == "_count" || suffix == "_created";
        case MetricType::Summary: return suffix == "_sum" || suffix == "_count" || suffix == "_created";
        case MetricType::Counter: return suffix == "_total" || suffix == "_created";
        default: return false;
    }
}

class PageParser {
public:
    explicit PageParser(const PrometheusLimits& limits) : limits_(limits) {}

    void comment(LineReader& r) {
        r.skip_blanks();
        const std::string_view keyword = r.word();
        if (keyword != "HELP" && keyword != "TYPE") return;  // any other comment
        r.skip_blanks();
        const std::string name = r.name(true, "a metric name");
        if (keyword == "HELP") {
            r.skip_blanks();
            family(name).help = unescape_help(r.rest());
            return;
        }
        r.skip_blanks();
        const std::optional<MetricType> type = type_named(r.word());
        r.skip_blanks();
        if (!type || !r.done()) fail(r.line(), "unknown metric type for " + name);
        MetricFamily& f = family(name);
        if (!f.samples.empty()) fail(r.line(), "the TYPE of " + name + " comes after its samples");
        f.type = *type;
    }

    void sample(LineReader& r) {
        MetricSample s;
        s.name = r.name(true, "a metric name");
        r.skip_blanks();
        if (r.take('{')) labels(r, s);
        r.skip_blanks();
        const std::string_view value = r.word();
        const std::optional<double> parsed = parse_value(value);
        if (!parsed) fail(r.line(), "'" + std::string(value) + "' is not a sample value");
        s.value = *parsed;
        r.skip_blanks();
        if (!r.done()) {
            const std::string_view stamp = r.word();
            int64_t ms = 0;
            const auto [end, ec] = std::from_chars(stamp.data(), stamp.data() + stamp.size(), ms);
            if (ec != std::errc() || end != stamp.data() + stamp.size()) fail(r.line(), "'" + std::string(stamp) + "' is not a timestamp");
            s.timestamp_ms = ms;
            r.skip_blanks();
            if (!r.done()) fail(r.line(), "unexpected text after the timestamp");
        }
        if (++samples_ > limits_.max_samples) fail(r.line(), "more than " + std::to_string(limits_.max_samples) + " samples");
        family_of_sample(s.name).samples.push_back(std::move(s));
    }

    std::vector<MetricFamily> take() { return std::move(families_); }

private:
    void labels(LineReader& r, MetricSample& s) {
        while (true) {
            r.skip_blanks();
            if (r.take('}')) return;
            std::string key = r.name(false, "a label name");
            r.skip_blanks();
            if (!r.take('=')) fail(r.line(), "expected '=' after the label " + key);
            r.skip_blanks();
            std::string value = r.quoted();
            if (s.labels.size() == limits_.max_labels_per_sample) fail(r.line(), "too many labels");
            s.labels.emplace_back(std::move(key), std::move(value));
            r.skip_blanks();
            if (r.take(',')) continue;
            if (!r.take('}')) fail(r.line(), "expected ',' or '}' in the labels");
            return;
        }
    }

    MetricFamily& family(const std::string& name) {
        const auto it = index_.find(name);
        if (it != index_.end()) return families_[it->second];
        index_.emplace(name, families_.size());
        families_.push_back(MetricFamily{name, MetricType::Untyped, {}, {}});
        return families_.back();
    }

    // A declared histogram, summary or counter takes its suffixed samples; any other name
    // is a family of its own.
    MetricFamily& family_of_sample(const std::string& name) {
        for (const std::string_view suffix : {"_bucket", "_sum", "_count", "_total", "_created"}) {
            if (!ends_with(name, suffix)) continue;
            const auto it = index_.find(name.substr(0, name.size() - suffix.size()));
            if (it != index_.end() && suffix_belongs(families_[it->second].type, suffix)) return families_[it->second];
        }
        return family(name);
    }

    const PrometheusLimits& limits_;
    std::vector<MetricFamily> families_;
    std::map<std::string, size_t, std::less<>> index_;
    size_t samples_ = 0;
};

}  // namespace

std::optional<std::string_view> MetricSample::label(std::string_view key) const {
    for (const auto& [k, v] : labels) {
        if (k == key) return std::string_view(v);
    }
    return std::nullopt;
}

std::vector<MetricFamily> parse_prometheus_text(std::string_view text, const PrometheusLimits& limits) {
    if (text.size() > limits.max_bytes) {
        throw RemoteError("the metrics page is " + std::to_string(text.size()) + " bytes, over the limit of " +
                          std::to_string(limits.max_bytes));
    }
    PageParser page(limits);
    size_t line_number = 0;
    while (!text.empty()) {
        const size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        LineReader r(line, line_number);
        r.skip_blanks();
        if (r.done()) continue;
        if (r.take('#')) {
            page.comment(r);
        } else {
            page.sample(r);
        }
    }
    return page.take();
}

const MetricFamily* find_family(const std::vector<MetricFamily>& families, std::string_view name) {
    for (const MetricFamily& f : families) {
        if (f.name == name) return &f;
    }
    return nullptr;
}

std::optional<double> Histogram::quantile(double q) const {
    if (buckets.empty()) return std::nullopt;
    const double total = buckets.back().second;
    if (!(total > 0)) return std::nullopt;
    const double rank = std::clamp(q, 0.0, 1.0) * total;
    double below = 0, lower_bound = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
        const auto [upper, cumulative] = buckets[i];
        if (cumulative >= rank && cumulative > below) {
            if (std::isinf(upper)) return i > 0 ? buckets[i - 1].first : std::optional<double>();
            const double start = i == 0 ? std::min(0.0, upper) : lower_bound;
            return start + (upper - start) * (rank - below) / (cumulative - below);
        }
        below = cumulative;
        lower_bound = upper;
    }
    return buckets.back().first;
}

Histogram histogram_of(const MetricFamily& family) {
    if (family.type != MetricType::Histogram) throw RemoteError(family.name + " is not a histogram");
    std::map<double, double> buckets;
    Histogram h;
    for (const MetricSample& s : family.samples) {
        if (s.name == family.name + "_bucket") {
            const std::optional<std::string_view> le = s.label("le");
            const std::optional<double> bound = le ? parse_value(*le) : std::nullopt;
            if (!bound || std::isnan(*bound)) throw RemoteError(family.name + " has a bucket without a valid 'le' label");
            buckets[*bound] += s.value;
        } else if (s.name == family.name + "_sum") {
            h.sum += s.value;
        } else if (s.name == family.name + "_count") {
            h.count += s.value;
        }
    }
    h.buckets.assign(buckets.begin(), buckets.end());
    return h;
}

}  // namespace inferscope::remote
