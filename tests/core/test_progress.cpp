// Progress: the fraction a report stands for within nested shares, and cancellation.
#include "engine/core/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace inferscope {
namespace {

struct Recorded {
    std::vector<double> fractions;
    std::vector<std::string> texts;  // "stage item done/total"
};

Progress recording(Recorded& out) {
    return Progress([&out](const ProgressUpdate& u) {
        out.fractions.push_back(u.fraction);
        out.texts.push_back(std::string(u.stage) + " " + std::string(u.item) + " " + std::to_string(u.done) + "/" +
                            std::to_string(u.total));
    });
}

TEST(Progress, AReportCarriesItsStageItemAndFraction) {
    Recorded r;
    const Progress p = recording(r);
    p.report("quantizing", 3, 12, "blk.0.attn_v.weight");
    p.report("quantizing", 12, 12);
    EXPECT_EQ(r.texts, (std::vector<std::string>{"quantizing blk.0.attn_v.weight 3/12", "quantizing  12/12"}));
    EXPECT_EQ(r.fractions, (std::vector<double>{0.25, 1.0}));
}

TEST(Progress, SharesMapTheirFractionIntoTheWholeCall) {
    Recorded r;
    const Progress whole = recording(r);
    const Progress second_half = whole.share(0.5, 1.0);
    second_half.report("b", 1, 2);
    // A share of a share: the third quarter of the second half.
    second_half.share(0.5, 0.75).report("c", 1, 1);
    whole.part(1, 4).report("d", 0, 10);
    whole.part(1, 4).report("d", 10, 10);
    EXPECT_EQ(r.fractions, (std::vector<double>{0.75, 0.875, 0.25, 0.5}));
}

TEST(Progress, OutOfRangeCountsStayWithinTheShare) {
    Recorded r;
    const Progress p = recording(r).share(0.2, 0.4);
    p.report("x", 5, 4);   // more done than announced
    p.report("x", -1, 4);  // nonsense below
    p.report("x", 3, 0);   // no total known
    EXPECT_DOUBLE_EQ(r.fractions[0], 0.4);
    EXPECT_DOUBLE_EQ(r.fractions[1], 0.2);
    EXPECT_DOUBLE_EQ(r.fractions[2], 0.2);
}

TEST(Progress, CancellationIsAskedOfTheCallerAndSharedByEveryPart) {
    bool stop = false;
    const Progress p([](const ProgressUpdate&) {}, [&stop] { return stop; });
    const Progress part = p.share(0.1, 0.2);
    EXPECT_FALSE(p.cancelled());
    EXPECT_FALSE(part.cancelled());
    stop = true;
    EXPECT_TRUE(p.cancelled());
    EXPECT_TRUE(part.cancelled());
}

TEST(Progress, TheDefaultReportsNowhereAndIsNeverCancelled) {
    const Progress quiet;
    quiet.report("anything", 1, 2);
    EXPECT_FALSE(quiet.cancelled());
    EXPECT_FALSE(quiet.share(0, 0.5).cancelled());
}

}  // namespace
}  // namespace inferscope
