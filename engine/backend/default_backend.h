#pragma once
// The backend a session gets when its caller names none: the CPU backend, which every machine
// has. Declared apart from CpuBackend so that the runtime depends on the Backend interface
// alone.
#include <memory>

#include "engine/backend/backend.h"

namespace inferscope {

class Model;

std::unique_ptr<Backend> make_default_backend(std::shared_ptr<const Model> model, int n_threads);

}  // namespace inferscope
