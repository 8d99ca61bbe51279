// PhaseRunner on its own: chains and a fake context, no sockets, no worker.

#include "proxy/phase_runner.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "plugins/fake_plugin_context.h"

namespace turnpike::proxy {
namespace {

using plugins::testing::FakePluginContext;

// Records every hook it runs into `trace` as "<phase>:<name>". `access` decides what its
// access hook returns; a paying plugin also appends to the body on the last piece.
class Step final : public Plugin {
 public:
  Step(std::string name, std::vector<std::string>* trace, uint32_t phases,
       PhaseResult access = PhaseResult::kContinue)
      : name_(std::move(name)), trace_(trace), phases_(phases), access_(access) {}
  uint32_t phases() const override { return phases_; }
  PhaseResult Rewrite(PluginContext&) const override {
    trace_->push_back("rewrite:" + name_);
    return PhaseResult::kContinue;
  }
  PhaseResult Access(PluginContext& ctx) const override {
    trace_->push_back("access:" + name_);
    if (access_ == PhaseResult::kRespond) ctx.Respond(429, name_);
    return access_;
  }
  void HeaderFilter(PluginContext&) const override { trace_->push_back("header:" + name_); }
  void BodyFilter(PluginContext&, BodyPiece& piece) const override {
    // Builds its output from its input in its scratch, as echo does: catches a runner that
    // hands a filter the buffer its input lives in.
    std::string_view in = piece.data;
    piece.out->clear();
    piece.out->append(in);
    piece.out->append("[" + name_ + "]");
    piece.data = *piece.out;
  }
  void Log(PluginContext&) const override { trace_->push_back("log:" + name_); }

 private:
  std::string name_;
  std::vector<std::string>* trace_;
  uint32_t phases_;
  PhaseResult access_;
};

constexpr uint32_t kAll =
    kPhaseRewrite | kPhaseAccess | kPhaseHeaderFilter | kPhaseBodyFilter | kPhaseLog;

PluginChain Chain(std::vector<std::shared_ptr<Step>> steps) {
  PluginChain c;
  for (auto& s : steps) c.entries.push_back({"step", 0, s, false, false});
  c.Sort();  // equal priorities: the order stays
  return c;
}

class PhaseRunnerTest : public ::testing::Test {
 protected:
  std::shared_ptr<Step> Make(std::string name, uint32_t phases = kAll,
                             PhaseResult access = PhaseResult::kContinue) {
    return std::make_shared<Step>(std::move(name), &trace_, phases, access);
  }
  uint32_t GlobalPhases() const {
    uint32_t p = 0;
    for (const auto& g : globals_) p |= g.phases;
    return p;
  }
  std::vector<std::string> trace_;
  std::vector<PluginChain> globals_;
  FakePluginContext ctx_;
  PhaseRunner runner_;
};

TEST_F(PhaseRunnerTest, GlobalRulesRunBeforeTheRouteInEveryPhase) {
  globals_.push_back(Chain({Make("g1"), Make("g2")}));
  PluginChain route = Chain({Make("r1")});
  runner_.Begin(globals_, GlobalPhases(), &route);
  EXPECT_EQ(runner_.RunRequestPhases(ctx_), PhaseResult::kContinue);
  runner_.RunHeaderFilters(ctx_);
  runner_.RunLog(ctx_);
  EXPECT_EQ(trace_, (std::vector<std::string>{"rewrite:g1", "rewrite:g2", "rewrite:r1", "access:g1",
                                              "access:g2", "access:r1", "header:g1", "header:g2",
                                              "header:r1", "log:g1", "log:g2", "log:r1"}));
}

TEST_F(PhaseRunnerTest, OnlyPluginsImplementingAPhaseRunIt) {
  PluginChain route = Chain({Make("logger", kPhaseLog), Make("guard", kPhaseAccess)});
  runner_.Begin({}, 0, &route);
  EXPECT_EQ(runner_.phases(), uint32_t{kPhaseLog | kPhaseAccess});
  EXPECT_FALSE(runner_.has(kPhaseBodyFilter));
  EXPECT_EQ(runner_.RunRequestPhases(ctx_), PhaseResult::kContinue);
  runner_.RunLog(ctx_);
  EXPECT_EQ(trace_, (std::vector<std::string>{"access:guard", "log:logger"}));
}

TEST_F(PhaseRunnerTest, NoRouteRunsTheGlobalRulesOnly) {
  globals_.push_back(Chain({Make("g")}));
  runner_.Begin(globals_, GlobalPhases(), nullptr);
  EXPECT_EQ(runner_.RunRequestPhases(ctx_), PhaseResult::kContinue);
  EXPECT_EQ(trace_, (std::vector<std::string>{"rewrite:g", "access:g"}));
}

TEST_F(PhaseRunnerTest, RespondSkipsTheRestOfTheRequestPhasesButNotTheResponsePhases) {
  globals_.push_back(Chain({Make("deny", kAll, PhaseResult::kRespond)}));
  PluginChain route = Chain({Make("r")});
  runner_.Begin(globals_, GlobalPhases(), &route);
  EXPECT_EQ(runner_.RunRequestPhases(ctx_), PhaseResult::kRespond);
  EXPECT_TRUE(ctx_.responded);
  EXPECT_EQ(ctx_.respond_status, 429);
  EXPECT_FALSE(runner_.paused());
  runner_.RunHeaderFilters(ctx_);
  EXPECT_EQ(trace_, (std::vector<std::string>{"rewrite:deny", "rewrite:r", "access:deny",
                                              "header:deny", "header:r"}));
}

TEST_F(PhaseRunnerTest, PauseResumesWithThePluginAfterTheOneThatPaused) {
  globals_.push_back(Chain({Make("g")}));
  PluginChain route =
      Chain({Make("wait", kAll, PhaseResult::kPause), Make("after"), Make("last", kPhaseAccess)});
  runner_.Begin(globals_, GlobalPhases(), &route);
  EXPECT_EQ(runner_.RunRequestPhases(ctx_), PhaseResult::kPause);
  EXPECT_TRUE(runner_.paused());
  EXPECT_EQ(trace_.back(), "access:wait");
  EXPECT_EQ(runner_.Resume(ctx_), PhaseResult::kContinue);
  EXPECT_FALSE(runner_.paused());
  EXPECT_EQ(trace_,
            (std::vector<std::string>{"rewrite:g", "rewrite:wait", "rewrite:after", "access:g",
                                      "access:wait", "access:after", "access:last"}));
}

TEST_F(PhaseRunnerTest, APluginMayPauseAgainAfterAResume) {
  PluginChain route = Chain({Make("a", kPhaseAccess, PhaseResult::kPause),
                             Make("b", kPhaseAccess, PhaseResult::kPause),
                             Make("c", kPhaseAccess, PhaseResult::kRespond)});
  runner_.Begin({}, 0, &route);
  EXPECT_EQ(runner_.RunRequestPhases(ctx_), PhaseResult::kPause);
  EXPECT_EQ(runner_.Resume(ctx_), PhaseResult::kPause);
  EXPECT_EQ(runner_.Resume(ctx_), PhaseResult::kRespond);
  EXPECT_EQ(trace_, (std::vector<std::string>{"access:a", "access:b", "access:c"}));
}

TEST_F(PhaseRunnerTest, BeginForgetsAPausedRequest) {
  PluginChain route =
      Chain({Make("wait", kPhaseAccess, PhaseResult::kPause), Make("next", kPhaseAccess)});
  runner_.Begin({}, 0, &route);
  EXPECT_EQ(runner_.RunRequestPhases(ctx_), PhaseResult::kPause);
  // The client went away: the exchange starts the next request without resuming.
  runner_.Begin({}, 0, nullptr);
  EXPECT_FALSE(runner_.paused());
  EXPECT_EQ(runner_.phases(), 0u);
  EXPECT_EQ(runner_.RunRequestPhases(ctx_), PhaseResult::kContinue);
  EXPECT_EQ(trace_, (std::vector<std::string>{"access:wait"}));
}

TEST_F(PhaseRunnerTest, BodyFiltersChainTheirOutputsAcrossPieces) {
  globals_.push_back(Chain({Make("g", kPhaseBodyFilter)}));
  PluginChain route = Chain({Make("a", kPhaseBodyFilter), Make("b", kPhaseBodyFilter)});
  runner_.Begin(globals_, GlobalPhases(), &route);
  std::string out;
  EXPECT_FALSE(runner_.body_started());
  EXPECT_FALSE(runner_.FilterBody(ctx_, "x", true, false, &out));
  EXPECT_TRUE(runner_.body_started());
  EXPECT_FALSE(runner_.FilterBody(ctx_, "y", false, true, &out));
  EXPECT_EQ(out, "x[g][a][b]y[g][a][b]");
}

// Ends the body at its first piece, as echo's `body` does.
class Truncate final : public Plugin {
 public:
  uint32_t phases() const override { return kPhaseBodyFilter; }
  void BodyFilter(PluginContext&, BodyPiece& piece) const override {
    piece.data = "replaced";
    piece.last = true;
  }
};

TEST_F(PhaseRunnerTest, AFilterThatEndsTheBodyEarlySaysSo) {
  PluginChain route;
  route.entries.push_back({"truncate", 0, std::make_shared<Truncate>(), false, false});
  route.Sort();
  runner_.Begin({}, 0, &route);
  std::string out;
  EXPECT_TRUE(runner_.FilterBody(ctx_, "original", true, false, &out));
  EXPECT_EQ(out, "replaced");
  out.clear();
  EXPECT_FALSE(runner_.FilterBody(ctx_, "tail", false, true, &out));  // last anyway: not early
}

}  // namespace
}  // namespace turnpike::proxy
