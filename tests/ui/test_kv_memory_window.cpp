// The KV-memory panel for a model with sliding-window layers: the local layers' line stops
// growing at the window while the global layers' keeps growing with the context.
#include <gtest/gtest.h>

#include "ui/panels/kv_memory_panel.h"

namespace inferscope::ui {
namespace {

TEST(KvMemoryPanelWindow, LocalLayersFlattenAtTheWindow) {
    ModelSummary model;  // gemma3-tiny's attention: 6 layers, 4 local with a window of 8
    model.config.n_layer = 6;
    model.config.n_head = 4;
    model.config.n_head_kv = 1;
    model.config.head_dim = 64;
    model.config.local_layers = {0, 1, 1, 0, 1, 1};
    model.config.sliding_window = 8;
    KvMemoryPanel panel;
    panel.set_model(model);
    StepRecord step;
    step.context_length = 40;
    step.phase = QStringLiteral("prefill");
    panel.add_steps({step});
    const double layer_bytes = 2.0 * 64 * 2;  // K and V of one 64-wide head in f16
    EXPECT_EQ(panel.local_layers_bytes_at(5), 4 * layer_bytes * 5);
    EXPECT_EQ(panel.local_layers_bytes_at(8), 4 * layer_bytes * 8);
    EXPECT_EQ(panel.local_layers_bytes_at(40), 4 * layer_bytes * 8);

    ModelSummary plain = model;
    plain.config.local_layers.clear();
    plain.config.sliding_window = 0;
    panel.set_model(plain);
    EXPECT_EQ(panel.local_layers_bytes_at(40), 0);
}

}  // namespace
}  // namespace inferscope::ui
