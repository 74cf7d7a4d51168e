// Per-dimension outlier statistics on hand-made values: streaming max, top-k, median,
// log2 histogram with its empty bins, persistence across layers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/probes/outlier_stats.h"

namespace inferscope {
namespace {

TEST(DimensionAbsMax, StreamsRowsInAnyChunkingToTheSameMaxima) {
    // [4 tokens x 3 dims]
    const std::vector<float> rows = {0.5f, -2.0f, 0.0f,  //
                                     -1.5f, 1.0f, 0.25f,  //
                                     0.1f, 0.2f, -7.0f,   //
                                     1.0f, -0.3f, 3.0f};
    DimensionAbsMax whole(3);
    whole.add_rows(rows.data(), 4, 3);
    DimensionAbsMax chunked(3);
    chunked.add_rows(rows.data(), 1, 3);
    chunked.add_rows(rows.data() + 3, 3, 3);
    const std::vector<float> expected = {1.5f, 2.0f, 7.0f};
    EXPECT_EQ(std::vector<float>(whole.max_abs().begin(), whole.max_abs().end()), expected);
    EXPECT_EQ(std::vector<float>(chunked.max_abs().begin(), chunked.max_abs().end()), expected);
    EXPECT_EQ(whole.n_tokens(), 4);
    EXPECT_EQ(chunked.n_tokens(), 4);
    EXPECT_THROW(whole.add_rows(rows.data(), 1, 4), InvalidArgument);
    EXPECT_THROW(DimensionAbsMax(0), InvalidArgument);
}

TEST(TopDimensions, LargestFirstTiesByLowerDimension) {
    const std::vector<float> values = {1.0f, 9.0f, 3.0f, 9.0f, 0.5f};
    const auto top = top_dimensions(values, 3);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].dim, 1);
    EXPECT_EQ(top[1].dim, 3);
    EXPECT_EQ(top[2].dim, 2);
    EXPECT_EQ(top[2].value, 3.0f);
    EXPECT_EQ(top_dimensions(values, 10).size(), 5u);
    EXPECT_TRUE(top_dimensions(values, 0).empty());
}

TEST(Median, OddAndEvenCounts) {
    EXPECT_DOUBLE_EQ(median(std::vector<float>{5.0f, 1.0f, 3.0f}), 3.0);
    EXPECT_DOUBLE_EQ(median(std::vector<float>{4.0f, 1.0f, 3.0f, 2.0f}), 2.5);
    EXPECT_DOUBLE_EQ(median(std::vector<float>{}), 0.0);
}

TEST(Log2Histogram, OctaveBinsKeepTheEmptyOnesUpToTheLargestValue) {
    // A heap under 4, nothing from 4 to 1024, one value in [1024, 2048): an outlier's shape.
    const std::vector<float> values = {0.0f, 0.5f, 0.999f, 1.0f, 1.99f, 2.0f, 3.9f, 1579.6f};
    const auto bins = log2_histogram(values);
    ASSERT_EQ(bins.size(), 12u);  // [0,1) [1,2) [2,4) ... [1024,2048)
    EXPECT_EQ(bins[0].lower, 0.0);
    EXPECT_EQ(bins[0].upper, 1.0);
    EXPECT_EQ(bins[0].count, 3);
    EXPECT_EQ(bins[1].count, 2);
    EXPECT_EQ(bins[2].count, 2);
    EXPECT_EQ(bins[2].lower, 2.0);
    EXPECT_EQ(bins[2].upper, 4.0);
    for (size_t b = 3; b < 11; ++b) EXPECT_EQ(bins[b].count, 0) << "bin " << b;
    EXPECT_EQ(bins[11].lower, 1024.0);
    EXPECT_EQ(bins[11].upper, 2048.0);
    EXPECT_EQ(bins[11].count, 1);
    int64_t total = 0;
    for (const auto& b : bins) total += b.count;
    EXPECT_EQ(total, static_cast<int64_t>(values.size()));
    EXPECT_EQ(log2_histogram(std::vector<float>{}).size(), 1u);
    EXPECT_THROW(log2_histogram(std::vector<float>{-1.0f}), InvalidArgument);
    EXPECT_THROW(log2_histogram(std::vector<float>{NAN}), InvalidArgument);
}

TEST(LayerSummary, MeanMedianTopAndHistogramOfTheMaxima) {
    const std::vector<float> rows = {0.5f, -3.0f, 100.0f, 0.2f,  //
                                     -0.7f, 1.0f, -50.0f, 0.1f};
    DimensionAbsMax reducer(4);
    reducer.add_rows(rows.data(), 2, 4);
    const LayerOutlierSummary s = summarize_layer(6, reducer, 1);
    EXPECT_EQ(s.layer, 6);
    EXPECT_EQ(s.n_tokens, 2);
    EXPECT_NEAR(s.mean_dim_max_abs, (0.7 + 3.0 + 100.0 + 0.2) / 4, 1e-6);
    EXPECT_NEAR(s.median_dim_max_abs, (0.7 + 3.0) / 2, 1e-6);
    ASSERT_EQ(s.top.size(), 1u);
    EXPECT_EQ(s.top[0].dim, 2);
    EXPECT_EQ(s.top[0].value, 100.0f);
    ASSERT_EQ(s.histogram.size(), 8u);  // up to [64,128)
    EXPECT_EQ(s.histogram[0].count, 2);
    EXPECT_EQ(s.histogram[2].count, 1);
    EXPECT_EQ(s.histogram[7].count, 1);
}

TEST(Persistence, ListsTheLayersWhereEachTopDimensionAppears) {
    std::vector<LayerOutlierSummary> layers(4);
    for (int l = 0; l < 4; ++l) layers[static_cast<size_t>(l)].layer = l;
    layers[0].top = {{7, 10.0f}, {2, 5.0f}};
    layers[1].top = {{7, 20.0f}, {3, 4.0f}};
    layers[2].top = {{3, 9.0f}, {7, 8.0f}};
    layers[3].top = {{7, 30.0f}, {1, 1.0f}};
    const auto p = top_dimension_persistence(layers);
    ASSERT_EQ(p.size(), 4u);
    EXPECT_EQ(p[0].dim, 7);
    EXPECT_EQ(p[0].layers, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(p[1].dim, 3);
    EXPECT_EQ(p[1].layers, (std::vector<int>{1, 2}));
    EXPECT_EQ(p[2].dim, 1);  // one layer each: lower dimension first
    EXPECT_EQ(p[3].dim, 2);
}

TEST(TopAcrossLayers, RanksDimensionsByTheirLargestMaximumOverEveryLayer) {
    std::vector<LayerOutlierSummary> layers(3);
    for (int l = 0; l < 3; ++l) layers[static_cast<size_t>(l)].layer = l;
    //                        dim:  0     1     2     3     4
    layers[0].dim_max_abs = {1.0f, 9.0f, 2.0f, 0.5f, 3.0f};
    layers[1].dim_max_abs = {1.5f, 1.0f, 2.0f, 12.0f, 3.0f};
    layers[2].dim_max_abs = {0.5f, 1.0f, 9.0f, 0.5f, 1.0f};
    // Maxima over layers: 1.5, 9, 9, 12, 3; dims 1 and 2 tie at 9 (lower first).
    const auto top = top_dimensions_across_layers(layers, 4);
    ASSERT_EQ(top.size(), 4u);
    EXPECT_EQ(top[0].dim, 3);
    EXPECT_EQ(top[0].value, 12.0f);
    EXPECT_EQ(top[1].dim, 1);
    EXPECT_EQ(top[1].value, 9.0f);
    EXPECT_EQ(top[2].dim, 2);
    EXPECT_EQ(top[2].value, 9.0f);
    EXPECT_EQ(top[3].dim, 4);
    EXPECT_EQ(top[3].value, 3.0f);
    EXPECT_EQ(top_dimensions_across_layers(layers, 10).size(), 5u);  // fewer dimensions than asked
    EXPECT_TRUE(top_dimensions_across_layers({}, 4).empty());
    layers[2].dim_max_abs.pop_back();
    EXPECT_THROW(top_dimensions_across_layers(layers, 4), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
