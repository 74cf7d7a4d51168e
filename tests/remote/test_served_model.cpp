// The model and context length a server reports, from each engine's own page, against the
// miniature server on the loopback interface.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/remote/served_model.h"
#include "support/loopback_server.h"

namespace inferscope::remote {
namespace {

ServedModel describe(testing::FakeCompletions& fake) {
    testing::LoopbackServer loopback;
    fake.install(loopback.server());
    HttpClient client({loopback.start(), "", 10});
    return describe_served_model(client);
}

TEST(ServedModel, VllmAndSglangReportMaxModelLenInTheModelList) {
    testing::FakeCompletions fake;
    fake.models_page = R"({"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","max_model_len":32768}]})";
    fake.props_page = R"({"default_generation_settings":{"n_ctx":4096}})";  // not asked for
    const ServedModel m = describe(fake);
    EXPECT_EQ(m.id, "Qwen/Qwen3-8B");
    EXPECT_EQ(m.context_tokens, 32768);
    EXPECT_EQ(m.context_source, "/v1/models max_model_len");
}

TEST(ServedModel, LlamaServerReportsTheSlotContextInProps) {
    testing::FakeCompletions fake;
    fake.models_page = R"({"object":"list","data":[{"id":"qwen3-0.6b-q8_0.gguf","meta":{"n_ctx_train":40960}}]})";
    fake.props_page = R"({"default_generation_settings":{"n_ctx":8192,"params":{}},"total_slots":4})";
    const ServedModel m = describe(fake);
    EXPECT_EQ(m.id, "qwen3-0.6b-q8_0.gguf");
    EXPECT_EQ(m.context_tokens, 8192);  // what requests may fill, not the training length
    EXPECT_EQ(m.context_source, "/props n_ctx");
}

TEST(ServedModel, TgiReportsMaxTotalTokensInInfo) {
    testing::FakeCompletions fake;
    fake.props_page = "<html>not json</html>";  // a page that is not JSON is passed over
    fake.info_page = R"({"model_id":"meta-llama/Llama-3.2-1B","max_input_tokens":4095,"max_total_tokens":4096})";
    const ServedModel m = describe(fake);
    EXPECT_EQ(m.id, "fake-model");
    EXPECT_EQ(m.context_tokens, 4096);
    EXPECT_EQ(m.context_source, "/info max_total_tokens");
}

TEST(ServedModel, NoContextReportedIsNoError) {
    testing::FakeCompletions fake;
    fake.models_page = R"({"data":[{"id":"m","max_model_len":-1}]})";  // not a length
    fake.info_page = R"({"max_total_tokens":"4096"})";                 // nor a string
    const ServedModel m = describe(fake);
    EXPECT_EQ(m.id, "m");
    EXPECT_FALSE(m.context_tokens.has_value());
    EXPECT_TRUE(m.context_source.empty());
}

TEST(ServedModel, AModelListWithoutAnIdIsAnError) {
    for (const char* page : {R"({"data":[]})", R"({"data":[{"object":"model"}]})", "[1,2]", "not json"}) {
        testing::FakeCompletions fake;
        fake.models_page = page;
        try {
            describe(fake);
            ADD_FAILURE() << "no error for " << page;
        } catch (const RemoteError& e) {
            EXPECT_NE(std::string(e.what()).find("/v1/models: no model id in"), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace inferscope::remote
