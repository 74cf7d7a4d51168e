#pragma once
// How a kernel family completes itself: what a family does not provide comes from the first
// family below it that the CPU runs (runnable_family_below), down to the scalar reference.
#include "engine/backend/cpu/cpu_features.h"

namespace inferscope {

// The first non-null kernel `own(family)` gives, walking from `isa` down the runnable
// families; the walk ends at Scalar with whatever `own(CpuIsa::Scalar)` gives.
template <class OwnKernel>
auto first_provided_kernel(CpuIsa isa, OwnKernel own) {
    for (;; isa = runnable_family_below(isa)) {
        const auto kernel = own(isa);
        if (kernel != nullptr || isa == CpuIsa::Scalar) return kernel;
    }
}

// Each of `members` (pointers to a table's function members) that `own` leaves null is taken
// from `below`.
template <class Table, class... Members>
void take_missing(Table& own, const Table& below, Members... members) {
    ((own.*members = own.*members != nullptr ? own.*members : below.*members), ...);
}

}  // namespace inferscope
