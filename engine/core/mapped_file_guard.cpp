#include "engine/core/mapped_file_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "engine/core/error.h"

namespace inferscope {
namespace {

// The handler reads these without locks: a slot is live while `end` is non-zero, and
// registration publishes `begin` before `end`.
struct GuardedRange {
    std::atomic<uintptr_t> begin{0};
    std::atomic<uintptr_t> end{0};
    std::atomic<bool> faulted{false};
    bool taken = false;  // under registry_mutex
};

GuardedRange g_ranges[MappedRangeGuard::kMaxRanges];
std::mutex g_registry_mutex;
struct sigaction g_previous_action {};
std::atomic<uintptr_t> g_page_bytes{0};  // set before the handler is installed (sysconf is not signal-safe)
bool g_handler_installed = false;        // under registry_mutex

void restore_default_action() {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(SIGBUS, &default_action, nullptr);
}

// A fault (si_code > 0) outside every range: with the default action (or "ignore", which the
// kernel overrides for a real fault) restored, returning re-runs the read and the process ends
// with SIGBUS as it would have. A sent signal (si_code <= 0) is re-sent under the default
// action, or dropped when it was ignored before.
void forward_to_previous(int signal, siginfo_t* info, void* context) {
    const bool sent = info->si_code <= 0;
    if (g_previous_action.sa_flags & SA_SIGINFO) {
        if (g_previous_action.sa_sigaction != nullptr) g_previous_action.sa_sigaction(signal, info, context);
        return;
    }
    if (g_previous_action.sa_handler == SIG_IGN && sent) return;
    if (g_previous_action.sa_handler == SIG_DFL || g_previous_action.sa_handler == SIG_IGN ||
        g_previous_action.sa_handler == nullptr) {
        restore_default_action();
        if (sent) raise(SIGBUS);
        return;
    }
    g_previous_action.sa_handler(signal);
}

// The range holding `address`, read so that a range being registered or removed meanwhile
// is never matched half-old, half-new (`end` read before and after `begin`).
GuardedRange* range_holding(uintptr_t address) {
    for (GuardedRange& range : g_ranges) {
        const uintptr_t end = range.end.load(std::memory_order_acquire);
        if (end == 0) continue;
        const uintptr_t begin = range.begin.load(std::memory_order_acquire);
        if (range.end.load(std::memory_order_acquire) != end) continue;
        if (address >= begin && address < end) return &range;
    }
    return nullptr;
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
    // Only a fault carries the faulting address; a sent signal's si_addr is the sender's ids.
    GuardedRange* range = info->si_code > 0 ? range_holding(reinterpret_cast<uintptr_t>(info->si_addr)) : nullptr;
    if (range != nullptr) {
        const uintptr_t page_bytes = g_page_bytes.load(std::memory_order_relaxed);
        const uintptr_t page = reinterpret_cast<uintptr_t>(info->si_addr) & ~(page_bytes - 1);
        // A raw system call: mmap is what makes the page readable again, and the C library's
        // wrapper is not on the async-signal-safe list.
        const long mapped = syscall(SYS_mmap, page, page_bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (mapped != -1) {
            range->faulted.store(true, std::memory_order_release);
            return;
        }
    }
    forward_to_previous(signal, info, context);
}

void install_handler_locked() {
    if (g_handler_installed) return;
    g_page_bytes.store(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)), std::memory_order_relaxed);
    // The previous action is read first, so that the handler never runs without it.
    if (sigaction(SIGBUS, nullptr, &g_previous_action) != 0) throw Error("cannot read the SIGBUS action");
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, nullptr) != 0) throw Error("cannot install the SIGBUS handler for mapped files");
    g_handler_installed = true;
}

}  // namespace

MappedRangeGuard::MappedRangeGuard(const void* begin, size_t bytes) : slot_(-1) {
    std::lock_guard lock(g_registry_mutex);
    install_handler_locked();
    for (int i = 0; i < kMaxRanges; ++i) {
        GuardedRange& range = g_ranges[i];
        if (range.taken) continue;
        range.taken = true;
        range.faulted.store(false);
        range.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
        range.end.store(reinterpret_cast<uintptr_t>(begin) + bytes, std::memory_order_release);
        slot_ = i;
        return;
    }
    throw Error("more than " + std::to_string(kMaxRanges) + " model files are mapped at once");
}

MappedRangeGuard::~MappedRangeGuard() {
    std::lock_guard lock(g_registry_mutex);
    GuardedRange& range = g_ranges[slot_];
    range.end.store(0, std::memory_order_release);
    range.taken = false;
}

bool MappedRangeGuard::faulted() const { return g_ranges[slot_].faulted.load(std::memory_order_acquire); }

}  // namespace inferscope
