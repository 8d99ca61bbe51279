#include "metrics/registry.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "base/courtesy.h"

namespace turnpike::metrics {
namespace {

bool ValidName(std::string_view name, bool colons) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (colons && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// The series key: each label value with '\0' written as "\0\1", ended by "\0\0". Exact for
// any bytes, and keys sort as the tuples of label values do.
void AppendKeyPart(std::string* key, std::string_view v) {
  for (char c : v) {
    key->push_back(c);
    if (c == '\0') key->push_back('\1');
  }
  key->append(2, '\0');
}

std::vector<std::string> SplitKey(std::string_view key) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] != '\0' || i + 1 >= key.size()) {
      out.back().push_back(key[i]);
    } else if (key[++i] == '\1') {
      out.back().push_back('\0');
    } else {
      out.emplace_back();
    }
  }
  out.pop_back();  // the empty one after the last terminator
  return out;
}

// Only the owning worker writes, so a relaxed load and store is an increment.
void Bump(std::atomic<uint64_t>& a, uint64_t d) {
  a.store(a.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}
void Bump(std::atomic<double>& a, double d) {
  a.store(a.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

std::string LabelList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out + "]";
}

// Registry::Type as stored in a Family.
constexpr int kHistogramType = 2;

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(v));
    return std::string(buf, r.ptr);
  }
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

void AppendEscapedLabelValue(std::string* out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '"') {
      out->append("\\\"");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

// One metric family: its shape and one series table per worker.
class Family final : public Counter, public Gauge, public Histogram {
 public:
  struct Cell {
    std::atomic<uint64_t> count{0};                    // counter value; histogram observations
    std::atomic<double> value{0};                      // gauge value; histogram sum
    std::unique_ptr<std::atomic<uint64_t>[]> buckets;  // histogram: per bound, +Inf last
  };
  struct Table {
    std::mutex mu;  // insertions (by the owner) and scrapes
    std::unordered_map<std::string, std::unique_ptr<Cell>> series;
    std::string scratch;  // the owner's key buffer
  };

  Family(int type, MetricOptions options, std::vector<double> bounds, int workers)
      : type(type), options(std::move(options)), bounds(std::move(bounds)), tables(workers) {
    for (auto& t : tables) t = std::make_unique<Table>();
  }

  void Add(int worker, LabelValues values, uint64_t delta) override {
    if (Cell* c = Find(worker, values)) Bump(c->count, delta);
  }
  CounterCell BindCounter(int worker, LabelValues values) override {
    Cell* c = Find(worker, values);
    return c == nullptr ? CounterCell() : CounterCell(&c->count);
  }
  HistogramCell BindHistogram(int worker, LabelValues values) override {
    Cell* c = Find(worker, values);
    if (c == nullptr || !c->buckets) return {};
    return HistogramCell(bounds, c->buckets.get(), &c->count, &c->value);
  }
  void Set(int worker, LabelValues values, double value) override {
    if (Cell* c = Find(worker, values)) c->value.store(value, std::memory_order_relaxed);
  }
  void Add(int worker, LabelValues values, double delta) override {
    if (Cell* c = Find(worker, values)) Bump(c->value, delta);
  }
  void Observe(int worker, LabelValues values, double value) override {
    Cell* c = Find(worker, values);
    if (c == nullptr) return;
    size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                                   bounds.begin());  // first bound >= value (le is inclusive)
    Bump(c->buckets[i], 1);
    Bump(c->count, 1);
    Bump(c->value, value);
  }

  // nullptr for a bad worker index or label count (ignored rather than undefined).
  Cell* Find(int worker, LabelValues values) {
    if (worker < 0 || static_cast<size_t>(worker) >= tables.size() ||
        values.size() != options.label_names.size()) {
      return nullptr;
    }
    Table& t = *tables[static_cast<size_t>(worker)];
    t.scratch.clear();
    for (std::string_view v : values) AppendKeyPart(&t.scratch, v);
    auto it = t.series.find(t.scratch);
    if (it != t.series.end()) return it->second.get();
    // A new cell: the bound is checked here only, so the shared count is touched once per
    // label set and worker, never per update.
    if (options.max_series != 0 &&
        cells.fetch_add(1, std::memory_order_relaxed) >= options.max_series) {
      cells.fetch_sub(1, std::memory_order_relaxed);
      dropped.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    auto cell = std::make_unique<Cell>();
    if (type == kHistogramType) {
      cell->buckets = std::make_unique<std::atomic<uint64_t>[]>(bounds.size() + 1);
    }
    std::lock_guard<std::mutex> lock(t.mu);
    return t.series.emplace(t.scratch, std::move(cell)).first->second.get();
  }

  const int type;  // Registry::Type
  const MetricOptions options;
  const std::vector<double> bounds;
  std::vector<std::unique_ptr<Table>> tables;
  std::atomic<size_t> cells{0};      // cells created (only counted with a max_series)
  std::atomic<uint64_t> dropped{0};  // label sets refused by max_series
};

Registry::Registry(int worker_count) : worker_count_(std::max(1, worker_count)) {}
Registry::~Registry() = default;

StatusOr<Family*> Registry::Add(Type type, const MetricOptions& options,
                                const std::vector<double>& buckets) {
  static constexpr const char* kTypeNames[] = {"counter", "gauge", "histogram"};
  static_assert(static_cast<int>(Type::kHistogram) == kHistogramType);
  if (!ValidName(options.name, /*colons=*/true)) {
    return Status::Error("invalid metric name '" + options.name + "'");
  }
  for (const std::string& l : options.label_names) {
    if (!ValidName(l, /*colons=*/false) || l.starts_with("__") ||
        (type == Type::kHistogram && l == "le")) {
      return Status::Error("invalid label name '" + l + "' for metric '" + options.name + "'");
    }
  }
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!std::isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1])) {
      return Status::Error("histogram buckets must increase and be finite (metric '" +
                           options.name + "')");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    if (f->options.name != options.name) continue;
    if (f->type == static_cast<int>(type) && f->options.label_names == options.label_names &&
        f->bounds == buckets) {
      return f.get();
    }
    return Status::Error("metric '" + options.name + "' already registered as a " +
                         kTypeNames[f->type] + " with labels " + LabelList(f->options.label_names));
  }
  families_.push_back(
      std::make_unique<Family>(static_cast<int>(type), options, buckets, worker_count_));
  return families_.back().get();
}

uint64_t Registry::dropped_series() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& f : families_) n += f->dropped.load(std::memory_order_relaxed);
  return n;
}

StatusOr<Counter*> Registry::AddCounter(const MetricOptions& options) {
  StatusOr<Family*> f = Add(Type::kCounter, options, {});
  if (!f.ok()) return f.status();
  return static_cast<Counter*>(f.value());
}

StatusOr<Gauge*> Registry::AddGauge(const MetricOptions& options) {
  StatusOr<Family*> f = Add(Type::kGauge, options, {});
  if (!f.ok()) return f.status();
  return static_cast<Gauge*>(f.value());
}

StatusOr<Histogram*> Registry::AddHistogram(const MetricOptions& options,
                                            const std::vector<double>& buckets) {
  StatusOr<Family*> f = Add(Type::kHistogram, options, buckets);
  if (!f.ok()) return f.status();
  return static_cast<Histogram*>(f.value());
}

namespace {

struct Sum {
  uint64_t count = 0;
  double value = 0;
  std::vector<uint64_t> buckets;
};

// `{a="x",b="y"` (no closing brace), or "" without labels and `extra`.
void AppendLabels(std::string* out, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, std::string_view extra_name = {},
                  std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return;
  out->push_back('{');
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(names[i]).append("=\"");
    AppendEscapedLabelValue(out,
                            i < values.size() ? std::string_view(values[i]) : std::string_view());
    out->push_back('"');
  }
  if (!extra_name.empty()) {
    if (!names.empty()) out->push_back(',');
    out->append(extra_name).append("=\"").append(extra_value).push_back('"');
  }
  out->push_back('}');
}

void AppendHelp(std::string* out, std::string_view help) {
  for (char c : help) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

std::string Registry::RenderPrometheus() const {
  static constexpr const char* kTypeNames[] = {"counter", "gauge", "histogram"};
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    const std::string& name = f->options.name;
    out.append("# HELP ").append(name).push_back(' ');
    AppendHelp(&out, f->options.help);
    out.append("\n# TYPE ").append(name).push_back(' ');
    out.append(kTypeNames[f->type]).push_back('\n');
    std::map<std::string, Sum> sums;
    if (f->options.label_names.empty()) sums[""];  // the zero value shows before any update
    for (const auto& table : f->tables) {
      std::lock_guard<std::mutex> table_lock(table->mu);
      for (const auto& [key, cell] : table->series) {
        Sum& s = sums[key];
        s.count += cell->count.load(std::memory_order_relaxed);
        s.value += cell->value.load(std::memory_order_relaxed);
        if (cell->buckets) {
          s.buckets.resize(f->bounds.size() + 1);
          for (size_t i = 0; i <= f->bounds.size(); ++i) {
            s.buckets[i] += cell->buckets[i].load(std::memory_order_relaxed);
          }
        }
      }
    }
    for (auto& [key, s] : sums) {
      base::CourtesyPoint();  // a 10k-series scrape is milliseconds on a CPU workers share
      std::vector<std::string> values = SplitKey(key);
      const std::vector<std::string>& names = f->options.label_names;
      if (f->type == static_cast<int>(Type::kHistogram)) {
        s.buckets.resize(f->bounds.size() + 1);
        uint64_t cumulative = 0;
        for (size_t i = 0; i <= f->bounds.size(); ++i) {
          cumulative += s.buckets[i];
          out.append(name).append("_bucket");
          std::string le = i < f->bounds.size() ? FormatValue(f->bounds[i]) : "+Inf";
          AppendLabels(&out, names, values, "le", le);
          out.push_back(' ');
          out.append(std::to_string(cumulative)).push_back('\n');
        }
        out.append(name).append("_sum");
        AppendLabels(&out, names, values);
        out.push_back(' ');
        out.append(FormatValue(s.value)).push_back('\n');
        out.append(name).append("_count");
        AppendLabels(&out, names, values);
        out.push_back(' ');
        out.append(std::to_string(s.count)).push_back('\n');
        continue;
      }
      out.append(name);
      AppendLabels(&out, names, values);
      out.push_back(' ');
      if (f->type == static_cast<int>(Type::kCounter)) {
        out.append(std::to_string(s.count));
      } else {
        out.append(FormatValue(s.value));
      }
      out.push_back('\n');
    }
  }
  return out;
}

}  // namespace turnpike::metrics
