#pragma once
// The backend a session gets when its caller names none: the CPU backend, which every machine
// has. Declared apart from CpuBackend so that the runtime depends on the Backend interface
// alone.
#include <functional>
#include <memory>

#include "engine/backend/backend.h"

namespace inferscope {

class Model;

std::unique_ptr<Backend> make_default_backend(std::shared_ptr<const Model> model, int n_threads);

// Makes the backend a session of `model` runs on: the app's choice of the GPU, a test's own.
using BackendFactory = std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>)>;

}  // namespace inferscope
