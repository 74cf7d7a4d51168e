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
bool g_handler_installed = false;  // under registry_mutex

void forward_to_previous(int signal, siginfo_t* info, void* context) {
    if (g_previous_action.sa_flags & SA_SIGINFO) {
        if (g_previous_action.sa_sigaction != nullptr) g_previous_action.sa_sigaction(signal, info, context);
        return;
    }
    if (g_previous_action.sa_handler == SIG_IGN) return;
    if (g_previous_action.sa_handler == SIG_DFL || g_previous_action.sa_handler == nullptr) {
        // Back to the default action; returning re-runs the faulting read, which then ends
        // the process with SIGBUS as if no handler had been installed.
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        sigemptyset(&default_action.sa_mask);
        sigaction(SIGBUS, &default_action, nullptr);
        return;
    }
    g_previous_action.sa_handler(signal);
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
    const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
    for (GuardedRange& range : g_ranges) {
        const uintptr_t end = range.end.load(std::memory_order_acquire);
        if (end == 0 || address < range.begin.load(std::memory_order_relaxed) || address >= end) continue;
        const auto page_bytes = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
        const uintptr_t page = address & ~(page_bytes - 1);
        // A raw system call: mmap is what makes the page readable again, and the C library's
        // wrapper is not on the async-signal-safe list.
        const long mapped = syscall(SYS_mmap, page, page_bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (mapped == -1) break;
        range.faulted.store(true, std::memory_order_release);
        return;
    }
    forward_to_previous(signal, info, context);
}

void install_handler_locked() {
    if (g_handler_installed) return;
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, &g_previous_action) != 0) throw Error("cannot install the SIGBUS handler for mapped files");
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
        range.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_relaxed);
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
    range.begin.store(0, std::memory_order_relaxed);
    range.taken = false;
}

bool MappedRangeGuard::faulted() const { return g_ranges[slot_].faulted.load(std::memory_order_acquire); }

}  // namespace inferscope
