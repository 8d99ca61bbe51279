// Worker-scope plugin state (turnpike/worker_state.h, proxy/worker_states.h): the snapshot
// numbers the instances that have it, each worker creates their states on its own thread when
// it adopts a snapshot, carries them over while later snapshots keep the instance, keeps them
// while a request of an older snapshot still runs, and destroys them on its thread when they
// are gone from its snapshot and at shutdown.
#include "proxy/worker_states.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/specs.h"
#include "metrics/registry.h"
#include "proxy/plugin_registry.h"
#include "proxy/snapshot.h"
#include "proxy/worker.h"

namespace turnpike::proxy {
namespace {

// What the states of Tracked plugins saw, in order, from whichever thread.
struct Event {
  std::string what;  // "create" or "destroy"
  std::string name;  // the plugin's
  int worker_index = -1;
  int worker_count = 0;
  uv_loop_t* loop = nullptr;
  std::thread::id thread;
};

class Journal {
 public:
  void Add(Event e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
    cv_.notify_all();
  }
  // Waits (up to 10 s) until `n` events match `what` and `name`; returns those events.
  std::vector<Event> WaitFor(const std::string& what, const std::string& name, size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    std::vector<Event> found;
    cv_.wait_for(lock, std::chrono::seconds(10), [&] {
      found = Matching(what, name);
      return found.size() >= n;
    });
    return found;
  }
  size_t Count(const std::string& what, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return Matching(what, name).size();
  }

 private:
  std::vector<Event> Matching(const std::string& what, const std::string& name) const {
    std::vector<Event> out;
    for (const Event& e : events_) {
      if (e.what == what && e.name == name) out.push_back(e);
    }
    return out;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> events_;
};

class TrackedState final : public WorkerState {
 public:
  TrackedState(std::string name, const WorkerEnvironment& env, Journal* journal)
      : name_(std::move(name)), env_(env), journal_(journal) {
    journal_->Add({"create", name_, env.worker_index, env.worker_count, env.loop,
                   std::this_thread::get_id()});
  }
  ~TrackedState() override {
    journal_->Add({"destroy", name_, env_.worker_index, env_.worker_count, env_.loop,
                   std::this_thread::get_id()});
  }

 private:
  std::string name_;
  WorkerEnvironment env_;
  Journal* journal_;
};

class Tracked final : public Plugin {
 public:
  Tracked(std::string name, Journal* journal) : name_(std::move(name)), journal_(journal) {}
  uint32_t phases() const override { return kPhaseLog; }
  bool has_worker_state() const override { return true; }
  std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& env) const override {
    return std::make_unique<TrackedState>(name_, env, journal_);
  }

 private:
  std::string name_;
  Journal* journal_;
};

// No worker state: never numbered.
class Plain final : public Plugin {
 public:
  uint32_t phases() const override { return kPhaseLog; }
};

// "tracked" {"name": n}: the same instance for the same name, build after build, as a
// snapshot that keeps an unchanged plugin would.
class TrackedFactory final : public PluginFactory {
 public:
  explicit TrackedFactory(Journal* journal) : journal_(journal) {}
  std::string_view name() const override { return "tracked"; }
  int priority() const override { return 1; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json& conf,
                                        FactoryContext&) const override {
    std::string name = conf.at("name").get<std::string>();
    std::lock_guard<std::mutex> lock(mu_);
    PluginConstSharedPtr& p = instances_[name];
    if (p == nullptr) p = std::make_shared<Tracked>(name, journal_);
    return p;
  }
  PluginConstSharedPtr Instance(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    return instances_.at(name);
  }

 private:
  Journal* journal_;
  mutable std::mutex mu_;
  mutable std::map<std::string, PluginConstSharedPtr> instances_;
};

// "fresh" {"name": n}: a new instance on every Create(), as a real factory; only the build's
// reuse of unchanged instances keeps one across reloads.
class FreshFactory final : public PluginFactory {
 public:
  explicit FreshFactory(Journal* journal) : journal_(journal) {}
  std::string_view name() const override { return "fresh"; }
  int priority() const override { return 3; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json& conf,
                                        FactoryContext&) const override {
    return PluginConstSharedPtr(
        std::make_shared<Tracked>(conf.at("name").get<std::string>(), journal_));
  }

 private:
  Journal* journal_;
};

class PlainFactory final : public PluginFactory {
 public:
  std::string_view name() const override { return "plain"; }
  int priority() const override { return 2; }
  StatusOr<PluginConstSharedPtr> Create(const nlohmann::json&, FactoryContext&) const override {
    return PluginConstSharedPtr(std::make_shared<Plain>());
  }
};

config::PluginSpec Spec(const std::string& name, nlohmann::json conf) {
  config::PluginSpec p;
  p.name = name;
  p.conf = std::move(conf);
  p.path = "plugins." + name;
  return p;
}

// ---------------------------------------------------------------- the table on its own

// A snapshot whose only content is the instances with worker state, in slot order.
Snapshot Holding(std::vector<const Plugin*> plugins) {
  Snapshot s;
  s.worker_state_plugins = std::move(plugins);
  return s;
}

class WorkerStateTableTest : public ::testing::Test {
 protected:
  WorkerState* StateOf(const WorkerStatePin& pin, const Plugin& p, uint32_t slot) {
    return pin.get() != nullptr ? pin.get()->Find(p, slot) : nullptr;
  }
  Journal journal_;
  uv_loop_t loop_{};  // only its address is handed out
  WorkerStateTable table_{WorkerEnvironment{3, 4, &loop_}};
  Tracked a_{"a", &journal_};
  Tracked b_{"b", &journal_};
  Tracked c_{"c", &journal_};
};

TEST_F(WorkerStateTableTest, CreatesEachInstanceOnceAndCarriesItOver) {
  EXPECT_EQ(table_.Pin().get(), nullptr);  // no snapshot yet
  table_.Reset(Holding({&a_, &b_}));
  EXPECT_EQ(table_.created(), 2u);
  std::vector<Event> created = journal_.WaitFor("create", "a", 1);
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(created[0].worker_index, 3);
  EXPECT_EQ(created[0].worker_count, 4);
  EXPECT_EQ(created[0].loop, &loop_);
  EXPECT_EQ(created[0].thread, std::this_thread::get_id());

  WorkerStatePin pin = table_.Pin();
  WorkerState* a = StateOf(pin, a_, 0);
  WorkerState* b = StateOf(pin, b_, 1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(StateOf(pin, a_, 1), a);  // a wrong slot falls back to the scan
  EXPECT_EQ(StateOf(pin, a_, PluginChain::kNoWorkerState), a);
  EXPECT_EQ(StateOf(pin, c_, 0), nullptr);  // not in this snapshot
  pin.reset();

  // b is kept (in another slot), c is new, a is gone at once (no request pins it).
  table_.Reset(Holding({&c_, &b_}));
  EXPECT_EQ(table_.created(), 3u);
  EXPECT_EQ(table_.destroyed(), 1u);
  EXPECT_EQ(journal_.Count("destroy", "a"), 1u);
  EXPECT_EQ(journal_.Count("create", "b"), 1u);
  pin = table_.Pin();
  EXPECT_EQ(StateOf(pin, b_, 1), b);
  EXPECT_EQ(StateOf(pin, a_, 0), nullptr);
  EXPECT_EQ(table_.live_sets(), 1u);
}

TEST_F(WorkerStateTableTest, ARequestOfAnOlderSnapshotKeepsItsStates) {
  table_.Reset(Holding({&a_}));
  WorkerStatePin old_request = table_.Pin();
  WorkerState* a = StateOf(old_request, a_, 0);
  table_.Reset(Holding({&b_}));  // a reload removed a while the request runs (or waits)
  EXPECT_EQ(table_.destroyed(), 0u);
  EXPECT_EQ(table_.live_sets(), 2u);
  EXPECT_EQ(StateOf(old_request, a_, 0), a);
  WorkerStatePin new_request = table_.Pin();
  EXPECT_EQ(StateOf(new_request, a_, 0), nullptr);
  old_request.reset();  // its last request ended
  EXPECT_EQ(table_.destroyed(), 1u);
  EXPECT_EQ(journal_.Count("destroy", "a"), 1u);
  EXPECT_EQ(table_.live_sets(), 1u);
}

TEST_F(WorkerStateTableTest, AStateGoesWithTheLastSetHoldingIt) {
  table_.Reset(Holding({&a_}));
  WorkerStatePin first = table_.Pin();
  table_.Reset(Holding({&a_, &b_}));
  WorkerStatePin second = table_.Pin();
  table_.Reset(Holding({}));
  EXPECT_EQ(table_.live_sets(), 3u);
  first.reset();
  EXPECT_EQ(table_.destroyed(), 0u);  // the second set still holds a
  WorkerStatePin moved = std::move(second);
  EXPECT_EQ(second.get(), nullptr);
  moved.reset();
  EXPECT_EQ(table_.destroyed(), 2u);
  EXPECT_EQ(table_.created(), 2u);
}

TEST_F(WorkerStateTableTest, ClearAndTheDestructorDestroyEverything) {
  table_.Reset(Holding({&a_, &b_}));
  table_.Clear();
  EXPECT_EQ(table_.destroyed(), 2u);
  EXPECT_EQ(table_.Pin().get(), nullptr);
  {
    WorkerStateTable table(WorkerEnvironment{});
    table.Reset(Holding({&c_}));
  }
  EXPECT_EQ(journal_.Count("destroy", "c"), 1u);
}

// ---------------------------------------------------------------- numbering at build

class WorkerStateBuildTest : public ::testing::Test {
 protected:
  WorkerStateBuildTest() {
    registry_.Register(std::make_unique<TrackedFactory>(&journal_));
    registry_.Register(std::make_unique<PlainFactory>());
    registry_.Register(std::make_unique<FreshFactory>(&journal_));
    tracked_ = static_cast<const TrackedFactory*>(registry_.Find("tracked"));
  }
  SnapshotConstSharedPtr Build() {
    BuildReport report;
    SnapshotConstSharedPtr s =
        BuildSnapshot({&gateway_, &routes_, nullptr, ++version_, &registry_}, &report);
    EXPECT_TRUE(report.errors.empty()) << report.errors[0].ToString();
    return s;
  }
  // As the daemon reloads: the previous snapshot and the process's metrics registry.
  SnapshotConstSharedPtr Reload(const Snapshot* previous) {
    BuildReport report;
    SnapshotConstSharedPtr s =
        BuildSnapshot({&gateway_, &routes_, previous, ++version_, &registry_, &metrics_}, &report);
    EXPECT_TRUE(report.errors.empty()) << report.errors[0].ToString();
    return s;
  }
  config::RouteSpec Route(const std::string& id, std::vector<config::PluginSpec> plugins) {
    config::RouteSpec r;
    r.id = id;
    r.uris = {"/" + id};
    r.path = "routes[" + id + "]";
    r.plugins = std::move(plugins);
    return r;
  }

  Journal journal_;
  PluginRegistry registry_;
  const TrackedFactory* tracked_ = nullptr;
  config::GatewayConfig gateway_;
  config::RoutesConfig routes_;
  metrics::Registry metrics_{2};
  uint64_t version_ = 0;
};

TEST_F(WorkerStateBuildTest, OneSlotPerInstanceWhateverTheChainsSharingIt) {
  config::ServiceSpec service;
  service.id = "s";
  service.plugins = {Spec("tracked", {{"name", "shared"}})};
  routes_.services = {service};
  config::GlobalRuleSpec g;
  g.id = "g";
  g.plugins = {Spec("tracked", {{"name", "global"}}), Spec("plain", nlohmann::json::object())};
  routes_.global_rules = {g};
  config::RouteSpec r1 = Route("r1", {Spec("plain", nlohmann::json::object())});
  r1.service_id = "s";
  config::RouteSpec r2 = Route("r2", {Spec("tracked", {{"name", "own"}})});
  r2.service_id = "s";
  routes_.routes = {r1, r2};
  SnapshotConstSharedPtr s = Build();

  // global, then the service's (shared by both routes), then r2's own.
  ASSERT_EQ(s->worker_state_plugins.size(), 3u);
  EXPECT_EQ(s->worker_state_plugins[0], tracked_->Instance("global").get());
  EXPECT_EQ(s->worker_state_plugins[1], tracked_->Instance("shared").get());
  EXPECT_EQ(s->worker_state_plugins[2], tracked_->Instance("own").get());
  auto slot_of = [](const PluginChain& chain, const std::string& name) {
    for (const PluginChain::Entry& e : chain.entries) {
      if (e.name == name) return e.worker_state_slot;
    }
    return uint32_t{12345};
  };
  EXPECT_EQ(slot_of(s->global_rules[0], "tracked"), 0u);
  EXPECT_EQ(slot_of(s->global_rules[0], "plain"), PluginChain::kNoWorkerState);
  EXPECT_EQ(slot_of(s->routes[0].chain, "tracked"), 1u);
  EXPECT_EQ(slot_of(s->routes[0].chain, "plain"), PluginChain::kNoWorkerState);
  EXPECT_EQ(slot_of(s->routes[1].chain, "tracked"), 2u);  // the route's own wins over the service's
  EXPECT_EQ(journal_.Count("create", "global"), 0u);      // nothing is created at build
}

// ---------------------------------------------------------------- across reloads

TEST_F(WorkerStateBuildTest, AReloadThatKeepsTheConfKeepsTheState) {
  routes_.routes = {Route("r1", {Spec("fresh", {{"name", "x"}})}),
                    Route("r2", {Spec("fresh", {{"name", "y"}})})};
  SnapshotConstSharedPtr first = Reload(nullptr);
  uv_loop_t loop{};
  WorkerStateTable table(WorkerEnvironment{0, 1, &loop});
  table.Reset(*first);
  WorkerStatePin pin = table.Pin();
  const Plugin& x = *first->routes[0].chain.entries[0].plugin;
  WorkerState* x_state = pin.get()->Find(x, first->routes[0].chain.entries[0].worker_state_slot);
  ASSERT_NE(x_state, nullptr);
  pin.reset();

  // The file is read again: r1 unchanged, r2's conf changed.
  routes_.routes = {Route("r1", {Spec("fresh", {{"name", "x"}})}),
                    Route("r2", {Spec("fresh", {{"name", "y"}, {"v", 2}})})};
  SnapshotConstSharedPtr second = Reload(first.get());
  ASSERT_EQ(second->routes[0].chain.entries[0].plugin.get(), &x);
  EXPECT_NE(second->routes[1].chain.entries[0].plugin, first->routes[1].chain.entries[0].plugin);
  table.Reset(*second);
  pin = table.Pin();
  EXPECT_EQ(pin.get()->Find(x, second->routes[0].chain.entries[0].worker_state_slot), x_state);
  EXPECT_EQ(table.created(), 3u);    // x, y, then y's new instance
  EXPECT_EQ(table.destroyed(), 1u);  // y's first
  EXPECT_EQ(journal_.Count("create", "x"), 1u);
  EXPECT_EQ(journal_.Count("destroy", "x"), 0u);
  pin.reset();
  table.Clear();
}

// ---------------------------------------------------------------- on real workers

TEST_F(WorkerStateBuildTest, WorkersCreateKeepAndDestroyStatesOnTheirThreads) {
  gateway_.worker_processes = 2;
  auto gateway = std::make_shared<config::GatewayConfig>(gateway_);
  routes_.routes = {Route("r1", {Spec("tracked", {{"name", "x"}})})};
  SnapshotConstSharedPtr first = Build();
  Worker w0(0, gateway, {});
  Worker w1(1, gateway, {});
  w0.Start(first);
  w1.Start(first);

  // Created once per worker, on that worker's thread, with its index and loop.
  std::vector<Event> x = journal_.WaitFor("create", "x", 2);
  ASSERT_EQ(x.size(), 2u);
  std::map<int, std::thread::id> thread_of;
  for (const Event& e : x) {
    EXPECT_NE(e.thread, std::this_thread::get_id());
    EXPECT_EQ(e.worker_count, 2);
    EXPECT_NE(e.loop, nullptr);
    thread_of[e.worker_index] = e.thread;
  }
  ASSERT_EQ(thread_of.size(), 2u);  // workers 0 and 1
  EXPECT_NE(thread_of[0], thread_of[1]);
  EXPECT_NE(x[0].loop, x[1].loop);

  // A reload that keeps x (the same instance) and adds y: x is carried over.
  routes_.routes = {Route("r1", {Spec("tracked", {{"name", "x"}})}),
                    Route("r2", {Spec("tracked", {{"name", "y"}})})};
  SnapshotConstSharedPtr second = Build();
  w0.Publish(second);
  w1.Publish(second);
  EXPECT_EQ(journal_.WaitFor("create", "y", 2).size(), 2u);
  EXPECT_EQ(journal_.Count("create", "x"), 2u);
  EXPECT_EQ(journal_.Count("destroy", "x"), 0u);

  // A reload without x: destroyed on each worker's own thread.
  routes_.routes = {Route("r2", {Spec("tracked", {{"name", "y"}})})};
  SnapshotConstSharedPtr third = Build();
  w0.Publish(third);
  w1.Publish(third);
  std::vector<Event> gone = journal_.WaitFor("destroy", "x", 2);
  ASSERT_EQ(gone.size(), 2u);
  for (const Event& e : gone) EXPECT_EQ(e.thread, thread_of[e.worker_index]);
  EXPECT_EQ(journal_.Count("destroy", "y"), 0u);

  // Shutdown: what is left goes on the worker threads, before they end.
  w0.Drain();
  w1.Drain();
  w0.Join();
  w1.Join();
  std::vector<Event> y = journal_.WaitFor("destroy", "y", 2);
  ASSERT_EQ(y.size(), 2u);
  for (const Event& e : y) EXPECT_EQ(e.thread, thread_of[e.worker_index]);
  EXPECT_EQ(journal_.Count("create", "x"), 2u);
  EXPECT_EQ(journal_.Count("create", "y"), 2u);
}

TEST_F(WorkerStateBuildTest, WorkersKeepTheStatesOfAnUnchangedConfAcrossReloads) {
  gateway_.worker_processes = 2;
  auto gateway = std::make_shared<config::GatewayConfig>(gateway_);
  routes_.routes = {Route("r1", {Spec("fresh", {{"name", "k"}})})};
  SnapshotConstSharedPtr first = Reload(nullptr);
  Worker w0(0, gateway, {});
  Worker w1(1, gateway, {});
  w0.Start(first);
  w1.Start(first);
  EXPECT_EQ(journal_.WaitFor("create", "k", 2).size(), 2u);

  // The file is read again with r1 unchanged (and a new r2, whose states tell that both
  // workers have adopted the snapshot): r1's instance and its states are kept.
  routes_.routes = {Route("r1", {Spec("fresh", {{"name", "k"}})}),
                    Route("r2", {Spec("fresh", {{"name", "m"}})})};
  SnapshotConstSharedPtr second = Reload(first.get());
  EXPECT_EQ(second->routes[0].chain.entries[0].plugin, first->routes[0].chain.entries[0].plugin);
  w0.Publish(second);
  w1.Publish(second);
  EXPECT_EQ(journal_.WaitFor("create", "m", 2).size(), 2u);
  EXPECT_EQ(journal_.Count("create", "k"), 2u);
  EXPECT_EQ(journal_.Count("destroy", "k"), 0u);

  // r1's conf changes: a new instance, new states; the old ones go.
  routes_.routes = {Route("r1", {Spec("fresh", {{"name", "k"}, {"limit", 2}})}),
                    Route("r2", {Spec("fresh", {{"name", "m"}})})};
  SnapshotConstSharedPtr third = Reload(second.get());
  w0.Publish(third);
  w1.Publish(third);
  EXPECT_EQ(journal_.WaitFor("create", "k", 4).size(), 4u);
  EXPECT_EQ(journal_.WaitFor("destroy", "k", 2).size(), 2u);
  EXPECT_EQ(journal_.Count("create", "m"), 2u);
  EXPECT_EQ(journal_.Count("destroy", "m"), 0u);

  w0.Drain();
  w1.Drain();
  w0.Join();
  w1.Join();
  EXPECT_EQ(journal_.WaitFor("destroy", "k", 4).size(), 4u);
  EXPECT_EQ(journal_.WaitFor("destroy", "m", 2).size(), 2u);
}

}  // namespace
}  // namespace turnpike::proxy
