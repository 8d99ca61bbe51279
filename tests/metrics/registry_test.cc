#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "support/alloc_counter.h"

namespace turnpike::metrics {
namespace {

TEST(MetricsRegistryTest, CounterSumsWorkersPerLabelSet) {
  Registry r(3);
  StatusOr<Counter*> c = r.AddCounter({"http_requests_total", "Requests", {"route", "code"}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  c.value()->Add(0, {"r1", "200"});
  c.value()->Add(1, {"r1", "200"}, 2);
  c.value()->Add(2, {"r2", "404"});
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP http_requests_total Requests\n"
            "# TYPE http_requests_total counter\n"
            "http_requests_total{route=\"r1\",code=\"200\"} 3\n"
            "http_requests_total{route=\"r2\",code=\"404\"} 1\n");
}

TEST(MetricsRegistryTest, UnlabelledFamiliesShowZeroBeforeAnyUpdate) {
  Registry r(1);
  ASSERT_TRUE(r.AddCounter({"a_total", "A", {}}).ok());
  ASSERT_TRUE(r.AddGauge({"b", "B", {}}).ok());
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP a_total A\n# TYPE a_total counter\na_total 0\n"
            "# HELP b B\n# TYPE b gauge\nb 0\n");
}

TEST(MetricsRegistryTest, GaugeIsTheSumOfTheWorkersValues) {
  Registry r(2);
  Gauge* g = r.AddGauge({"conns", "Connections", {"state"}}).value();
  g->Set(0, {"active"}, 3);
  g->Set(1, {"active"}, 4.5);
  g->Add(1, {"active"}, -1);
  g->Set(0, {"active"}, 2);  // Set replaces this worker's value only
  EXPECT_NE(r.RenderPrometheus().find("conns{state=\"active\"} 5.5\n"), std::string::npos);
}

TEST(MetricsRegistryTest, HistogramRendersCumulativeBuckets) {
  Registry r(2);
  Histogram* h = r.AddHistogram({"latency", "Latency", {"type"}}, {1, 5, 10}).value();
  h->Observe(0, {"request"}, 0.5);
  h->Observe(1, {"request"}, 5);  // `le` is inclusive
  h->Observe(1, {"request"}, 50);
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP latency Latency\n"
            "# TYPE latency histogram\n"
            "latency_bucket{type=\"request\",le=\"1\"} 1\n"
            "latency_bucket{type=\"request\",le=\"5\"} 2\n"
            "latency_bucket{type=\"request\",le=\"10\"} 2\n"
            "latency_bucket{type=\"request\",le=\"+Inf\"} 3\n"
            "latency_sum{type=\"request\"} 55.5\n"
            "latency_count{type=\"request\"} 3\n");
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  Registry r(1);
  Counter* c = r.AddCounter({"x_total", "line\\one\ntwo", {"v"}}).value();
  c->Add(0, {"a\"b\\c\nd"});
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP x_total line\\\\one\\ntwo\n# TYPE x_total counter\n"
            "x_total{v=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(MetricsRegistryTest, RegistrationIsIdempotentForTheSameShape) {
  Registry r(1);
  Counter* a = r.AddCounter({"c_total", "C", {"x"}}).value();
  StatusOr<Counter*> again = r.AddCounter({"c_total", "other help", {"x"}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value(), a);
  StatusOr<Gauge*> as_gauge = r.AddGauge({"c_total", "C", {"x"}});
  ASSERT_FALSE(as_gauge.ok());
  EXPECT_EQ(as_gauge.status().message(),
            "metric 'c_total' already registered as a counter with labels [x]");
  EXPECT_FALSE(r.AddCounter({"c_total", "C", {"y"}}).ok());
  EXPECT_FALSE(r.AddHistogram({"h", "H", {}}, {1}).value() == nullptr);
  EXPECT_FALSE(r.AddHistogram({"h", "H", {}}, {2}).ok());  // other buckets
}

TEST(MetricsRegistryTest, RejectsBadNames) {
  Registry r(1);
  EXPECT_EQ(r.AddCounter({"bad-name", "", {}}).status().message(),
            "invalid metric name 'bad-name'");
  EXPECT_FALSE(r.AddCounter({"1abc", "", {}}).ok());
  EXPECT_TRUE(r.AddCounter({"ns:sub_total", "", {}}).ok());
  EXPECT_FALSE(r.AddCounter({"ok_total", "", {"__reserved"}}).ok());
  EXPECT_FALSE(r.AddCounter({"ok2_total", "", {"a:b"}}).ok());
  EXPECT_FALSE(r.AddHistogram({"h", "", {"le"}}, {1}).ok());
  EXPECT_EQ(r.AddHistogram({"h2", "", {}}, {2, 1}).status().message(),
            "histogram buckets must increase and be finite (metric 'h2')");
}

TEST(MetricsRegistryTest, IgnoresBadWorkerIndexAndLabelCount) {
  Registry r(1);
  Counter* c = r.AddCounter({"c_total", "C", {"x"}}).value();
  c->Add(1, {"a"});
  c->Add(-1, {"a"});
  c->Add(0, {"a", "b"});
  EXPECT_EQ(r.RenderPrometheus(), "# HELP c_total C\n# TYPE c_total counter\n");
}

TEST(MetricsRegistryTest, WarmUpdatesDoNotAllocate) {
  Registry r(1);
  Counter* c = r.AddCounter({"c_total", "C", {"route", "code"}}).value();
  Histogram* h = r.AddHistogram({"h", "H", {"route"}}, {1, 2, 3}).value();
  std::string route = "a-route-id-longer-than-sso-buffers";
  c->Add(0, {route, "200"});
  h->Observe(0, {route}, 1.5);
  uint64_t before = turnpike::testing::ThreadAllocations();
  for (int i = 0; i < 1000; ++i) {
    c->Add(0, {route, "200"});
    h->Observe(0, {route}, 2.5);
  }
  EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
}

TEST(MetricsRegistryTest, WorkersUpdateWhileScraping) {
  Registry r(2);
  Counter* c = r.AddCounter({"c_total", "C", {"w"}}).value();
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([c, w] {
      for (int i = 0; i < 20000; ++i) c->Add(w, {i % 2 ? "odd" : "even"});
    });
  }
  for (int i = 0; i < 50; ++i) r.RenderPrometheus();
  for (auto& t : workers) t.join();
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP c_total C\n# TYPE c_total counter\n"
            "c_total{w=\"even\"} 20000\nc_total{w=\"odd\"} 20000\n");
}

TEST(MetricsFormatTest, Values) {
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(-2), "-2");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
}

TEST(MetricsRegistryTest, BoundCellsAddToTheSeriesAndTheBoundDropsNewLabelSets) {
  Registry r(2);
  MetricOptions o{"hits", "Hits", {"route"}, 3};
  Counter* c = r.AddCounter(o).value();
  Histogram* h = r.AddHistogram({"lat", "Latency", {"route"}}, {1, 10}).value();
  CounterCell a0 = c->Bind(0, {"a"});
  CounterCell a1 = c->Bind(1, {"a"});
  CounterCell b0 = c->Bind(0, {"b"});
  a0.Add(2);
  a1.Add(1);
  b0.Add(1);
  c->Add(0, {"a"});                         // the same cell by label values
  CounterCell refused = c->Bind(1, {"c"});  // a fourth cell: past the bound
  EXPECT_TRUE(refused.empty());
  refused.Add(5);  // a no-op
  EXPECT_EQ(r.dropped_series(), 1u);
  HistogramCell l = h->Bind(0, {"a"});
  l.Observe(1);
  l.Observe(5);
  l.Observe(50);
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP hits Hits\n# TYPE hits counter\nhits{route=\"a\"} 4\nhits{route=\"b\"} 1\n"
            "# HELP lat Latency\n# TYPE lat histogram\nlat_bucket{route=\"a\",le=\"1\"} 1\n"
            "lat_bucket{route=\"a\",le=\"10\"} 2\nlat_bucket{route=\"a\",le=\"+Inf\"} 3\n"
            "lat_sum{route=\"a\"} 56\nlat_count{route=\"a\"} 3\n");
}

}  // namespace
}  // namespace turnpike::metrics
