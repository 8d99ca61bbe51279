#include "discovery/directory.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "base/courtesy.h"
#include "discovery/parts.h"
#include "upstream/chash.h"

namespace turnpike::discovery {

class Directory::Sink final : public DiscoverySink {
 public:
  Sink(Directory* directory, std::string provider)
      : directory_(directory), provider_(std::move(provider)) {}
  void Publish(const ServiceRef& service, DiscoveredNodesConstSharedPtr nodes) override {
    directory_->OnPublish(provider_, service, std::move(nodes));
  }
  void PublishParts(const ServiceRef& service,
                    std::vector<DiscoveredNodesConstSharedPtr> parts) override {
    directory_->OnPublishParts(provider_, service, std::move(parts));
  }

 private:
  Directory* directory_;
  std::string provider_;
};

namespace {

// The first node that fails the discovery node schema (DiscoveredNode's contract), or null.
const DiscoveredNode* FirstInvalid(const DiscoveredNodes& nodes) {
  for (const DiscoveredNode& n : nodes) {
    base::CourtesyPoint();
    if (n.host.empty() || n.weight < 0 || n.port < 0 || n.port > 65535) return &n;
  }
  return nullptr;
}

// a == b, with a courtesy point per node: a 10k-node answer on a CPU the workers share.
bool SameList(const DiscoveredNodes& a, const DiscoveredNodes& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    base::CourtesyPoint();
    if (!(a[i] == b[i])) return false;
  }
  return true;
}

}  // namespace

Directory::Directory(uv_loop_t* loop, Resolver* resolver, Options options)
    : loop_(loop), resolver_(resolver), options_(options) {}

Directory::~Directory() = default;

void Directory::AddProvider(std::string name, std::unique_ptr<DiscoveryProvider> provider) {
  providers_[std::move(name)] = std::move(provider);
}

Status Directory::Start() {
  for (auto& [name, provider] : providers_) {
    sinks_.push_back(std::make_unique<Sink>(this, name));
    Status s = provider->Start(DiscoveryEnvironment{sinks_.back().get(), loop_});
    if (!s.ok()) return Status::Error("discovery." + name + ": " + s.message());
  }
  uv_timer_init(loop_, &tick_);
  tick_.data = this;
  uv_timer_start(
      &tick_, [](uv_timer_t* t) { static_cast<Directory*>(t->data)->Tick(); }, options_.tick_ms,
      options_.tick_ms);
  started_ = true;
  return Status::Ok();
}

void Directory::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& [name, provider] : providers_) provider->Stop();
  for (auto& [name, host] : hosts_) {
    if (host.lookup != 0) resolver_->Cancel(host.lookup);
    host.lookup = 0;
  }
  if (started_) uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
}

void Directory::Apply(std::vector<Binding> bindings) {
  if (stopped_) return;
  std::unordered_map<const upstream::NodeSetSlot*, Entry> next;
  std::vector<Entry*> fresh;
  for (Binding& b : bindings) {
    const upstream::NodeSetSlot* key = b.slot.get();
    if (next.count(key) != 0) continue;  // several upstreams may share a slot
    auto old = entries_.find(key);
    if (old != entries_.end() && *old->second.binding.source == *b.source) {
      next.emplace(key, std::move(old->second));
      entries_.erase(old);
      continue;
    }
    Entry& e = next[key];
    e.binding = std::move(b);
    e.initial = !applied_;
    fresh.push_back(&e);
  }
  // New sources first, so names and services still in use are not dropped and looked up or
  // watched again.
  for (Entry* e : fresh) {
    const NodeSource& source = *e->binding.source;
    if (source.provider.empty()) {
      SetNodes(e, std::make_shared<const DiscoveredNodes>(source.nodes));
      continue;
    }
    auto p = providers_.find(source.provider);
    if (p == providers_.end()) {
      // APISIX: an upstream of an unconfigured discovery type has no nodes (503).
      spdlog::warn("{}: discovery type \"{}\" is not configured; requests get 503", e->binding.name,
                   source.provider);
      SetNodes(e, std::make_shared<const DiscoveredNodes>());
      continue;
    }
    Service& service = services_[{source.provider, source.service}];
    service.provider = p->second.get();
    e->service = &service;
    if (service.watchers++ == 0) service.provider->Watch(source.service);
    if (service.parted != nullptr) {
      SetParted(e, service.parted);
    } else {
      SetNodes(e, service.last);
    }
  }
  for (auto& [key, e] : entries_) Detach(&e);
  entries_ = std::move(next);
  applied_ = true;
  ReleaseRetired();
}

void Directory::Detach(Entry* e) {
  for (const std::string& name : e->hosts) {
    auto it = hosts_.find(name);
    if (it == hosts_.end() || --it->second.refs > 0) continue;
    if (it->second.lookup != 0) resolver_->Cancel(it->second.lookup);
    hosts_.erase(it);
  }
  e->hosts.clear();
  if (e->service != nullptr && --e->service->watchers == 0) {
    const NodeSource& source = *e->binding.source;
    e->service->provider->Unwatch(source.service);
    services_.erase({source.provider, source.service});
  }
  e->service = nullptr;
}

void Directory::OnPublish(const std::string& provider, const ServiceRef& ref,
                          DiscoveredNodesConstSharedPtr nodes) {
  base::IdleScope idle;  // any provider's answer: compare, node sets built and released
  if (stopped_) return;
  auto it = services_.find({provider, ref});
  if (it == services_.end()) return;  // not watched (any more)
  if (!nodes) nodes = std::make_shared<const DiscoveredNodes>();
  Service& service = it->second;
  if (service.raw != nullptr && SameList(*service.raw, *nodes)) {
    ++stats_.deduped;
    return;
  }
  ++stats_.published;
  service.parted = nullptr;
  service.raw = nodes;
  if (const DiscoveredNode* bad = FirstInvalid(*nodes)) {
    // APISIX checks the list against its discovery node schema and answers 503 ("invalid
    // nodes format") when any node fails it.
    ++stats_.invalid;
    spdlog::error(
        "discovery {}: service {}: invalid nodes format (node host \"{}\" port {} "
        "weight {}); the upstream has no nodes",
        provider, ref.service_name, bad->host, bad->port, bad->weight);
    nodes = std::make_shared<const DiscoveredNodes>();
  }
  service.last = nodes;
  for (auto& [key, e] : entries_) {
    if (e.service == &service) SetNodes(&e, nodes);
  }
}

void Directory::SetNodes(Entry* e, DiscoveredNodesConstSharedPtr nodes) {
  // The new list's names are referenced while it is built, before the old ones are dropped,
  // so a name in both is neither dropped nor looked up again.
  DiscoveredNodesConstSharedPtr previous = std::move(e->nodes);
  e->nodes = std::move(nodes);
  e->parted = nullptr;
  std::vector<std::string> names;
  Rebuild(e, previous.get(), &names);
  SetHosts(e, std::move(names));
}

void Directory::SetHosts(Entry* e, std::vector<std::string> names) {
  for (const std::string& name : e->hosts) {
    auto it = hosts_.find(name);
    if (it == hosts_.end() || --it->second.refs > 0) continue;
    if (it->second.lookup != 0) resolver_->Cancel(it->second.lookup);
    hosts_.erase(it);
  }
  e->hosts = std::move(names);
}

namespace {

// The parts of the service's last answer in parts, and a new answer's: the same lists (by
// pointer, or else by value) in the same order.
bool SameParts(const std::vector<DiscoveredNodesConstSharedPtr>& next, const auto& last) {
  if (next.size() != last.size()) return false;
  for (size_t i = 0; i < next.size(); ++i) {
    if (next[i] != last[i].list && !(*next[i] == *last[i].list)) return false;
  }
  return true;
}

}  // namespace

void Directory::OnPublishParts(const std::string& provider, const ServiceRef& ref,
                               std::vector<DiscoveredNodesConstSharedPtr> parts) {
  base::IdleScope idle;  // as OnPublish
  if (stopped_) return;
  auto it = services_.find({provider, ref});
  if (it == services_.end()) return;  // not watched (any more)
  Service& service = it->second;
  std::erase_if(parts,
                [](const DiscoveredNodesConstSharedPtr& p) { return p == nullptr || p->empty(); });
  std::sort(parts.begin(), parts.end(),
            [](const DiscoveredNodesConstSharedPtr& a, const DiscoveredNodesConstSharedPtr& b) {
              return NodeKeyLess(a->front(), b->front());
            });
  if (service.parted != nullptr && SameParts(parts, service.parted->parts)) {
    ++stats_.deduped;
    // Equal by value but new lists (a relist): the next answer compares by pointer again.
    const std::vector<Part>& last = service.parted->parts;
    if (!std::equal(
            parts.begin(), parts.end(), last.begin(),
            [](const DiscoveredNodesConstSharedPtr& p, const Part& q) { return p == q.list; })) {
      auto renewed = std::make_shared<Parted>(*service.parted);
      for (size_t i = 0; i < parts.size(); ++i) renewed->parts[i].list = parts[i];
      service.parted = std::move(renewed);
    }
    return;
  }
  PartedConstSharedPtr parted = MakeParted(service.parted.get(), parts);
  if (parted == nullptr) {
    // Parts that interleave, a domain name, a node failing the schema: as one list (resolved,
    // or answered 503 as invalid, by OnPublish).
    ++stats_.parts_merged;
    service.parted = nullptr;
    OnPublish(provider, ref, std::make_shared<const DiscoveredNodes>(MergeParts(parts)));
    return;
  }
  ++stats_.published;
  service.raw = nullptr;
  service.last = nullptr;
  service.parted = parted;
  for (auto& [key, e] : entries_) {
    if (e.service == &service) SetParted(&e, parted);
  }
}

namespace {

bool NodeLess(const upstream::Node* a, const upstream::Node* b) {
  return upstream::NodeOrder(*a, *b) < 0;
}

// The nodes of `blocks` (each sorted by NodeOrder) merged into `out` (appended) as pointers.
void MergeBlocks(const std::vector<const upstream::NodeBlock*>& blocks,
                 std::vector<const upstream::Node*>* out) {
  std::vector<SortedRun<upstream::Node>> runs;
  for (const upstream::NodeBlock* b : blocks) {
    if (!b->nodes.empty()) runs.push_back({b->nodes.data(), b->nodes.data() + b->nodes.size()});
  }
  MergeSortedRuns(
      std::move(runs),
      [](const upstream::Node& a, const upstream::Node& b) {
        return upstream::NodeOrder(a, b) < 0;
      },
      [out](const upstream::Node* from, const upstream::Node* to) {
        for (; from != to; ++from) out->push_back(from);
      });
}

// Whether `p` points into `b` (one unsigned compare: pointers below the block wrap around).
bool InBlock(const upstream::Node* p, const upstream::NodeBlock& b) {
  return static_cast<size_t>(reinterpret_cast<uintptr_t>(p) -
                             reinterpret_cast<uintptr_t>(b.nodes.data())) <
         b.nodes.size() * sizeof(upstream::Node);
}

}  // namespace

Directory::PartedConstSharedPtr Directory::MakeParted(
    const Parted* last, const std::vector<DiscoveredNodesConstSharedPtr>& parts) {
  auto parted = std::make_shared<Parted>();
  parted->parts.reserve(parts.size());
  bool uniform = true;
  size_t size = 0;
  std::vector<const upstream::NodeBlock*> added;  // blocks made here
  size_t added_nodes = 0;
  // The last answer's parts this one keeps (both in order of first nodes); the others' nodes
  // leave the order.
  std::vector<bool> kept_part(last != nullptr ? last->parts.size() : 0);
  size_t k = 0;  // in last->parts
  for (const DiscoveredNodesConstSharedPtr& list : parts) {
    Part part;
    part.list = list;
    if (last != nullptr) {
      while (k < last->parts.size() && NodeKeyLess(last->parts[k].list->front(), list->front())) {
        ++k;
      }
      if (k < last->parts.size() && !kept_part[k] &&
          (last->parts[k].list == list || *last->parts[k].list == *list)) {
        part.block = last->parts[k].block;  // an unchanged part: its nodes as they were made
        part.uniform = last->parts[k].uniform;
        kept_part[k] = true;
      }
    }
    if (part.block == nullptr) {
      // A new part: its nodes made here (~250 under bench/node_churn.sh's churn).
      auto block = std::make_shared<upstream::NodeBlock>();
      block->nodes.resize(list->size());
      for (size_t i = 0; i < list->size(); ++i) {
        base::CourtesyPoint();
        const DiscoveredNode& n = (*list)[i];
        // The list's path answers these (the schema's 503, a name's lookup). A port 0 is the
        // scheme's default, which would order the node apart from its list's order.
        if (n.host.empty() || n.weight < 0 || n.port <= 0 || n.port > 65535) return nullptr;
        if (i > 0 && CompareNodeKey((*list)[i - 1], n) >= 0) return nullptr;  // not sorted
        upstream::Node& node = block->nodes[i];
        if (!ParseIpLiteral(n.host, static_cast<uint16_t>(n.port), &node)) return nullptr;
        FinishNode(n, &node);
        if (i > 0) {
          const upstream::Node& first = block->nodes.front();
          part.uniform =
              part.uniform && node.weight == first.weight && node.priority == first.priority;
        }
      }
      stats_.part_nodes_built += list->size();
      added.push_back(block.get());
      added_nodes += block->nodes.size();
      part.block = std::move(block);
    }
    const upstream::Node& first = part.block->nodes.front();
    if (parted->parts.empty()) {
      parted->summary.weight = first.weight;
    } else {
      const upstream::Node& other = parted->parts.front().block->nodes.front();
      uniform = uniform && first.weight == other.weight && first.priority == other.priority;
    }
    uniform = uniform && part.uniform;
    size += part.block->nodes.size();
    parted->parts.push_back(std::move(part));
  }

  // The merged order. From the last answer's when few parts changed: its nodes of the parts
  // gone dropped (a pass over pointers), the new parts' nodes inserted (a search each).
  std::vector<const upstream::NodeBlock*> removed;
  for (size_t i = 0; i < kept_part.size(); ++i) {
    if (!kept_part[i]) removed.push_back(last->parts[i].block.get());
  }
  std::vector<const upstream::Node*> order;
  order.reserve(size);
  if (last != nullptr && removed.size() + added.size() <= 8 && added_nodes * 4 <= size) {
    // The last order without the removed parts' nodes: a pass over its pointers.
    const std::vector<const upstream::Node*>& before = last->nodes.pointers();
    std::vector<const upstream::Node*> kept(before.size());
    size_t m = 0;
    for (const upstream::Node* p : before) {
      bool gone = false;
      for (const upstream::NodeBlock* b : removed) gone = gone || InBlock(p, *b);
      kept[m] = p;
      m += gone ? 0 : 1;
    }
    kept.resize(m);
    std::vector<const upstream::Node*> fresh;
    fresh.reserve(added_nodes);
    MergeBlocks(added, &fresh);
    auto from = kept.begin();
    for (size_t i = 0; i < fresh.size(); ++i) {
      const upstream::Node* p = fresh[i];
      if (i > 0 && !NodeLess(fresh[i - 1], p)) return nullptr;  // the same host and port twice
      // Galloping from the last place: the new nodes are sorted, and a part's nodes often go
      // to one place (few nodes read), or else spread over the set (a short search each).
      size_t step = 1;
      auto lo = from;
      while (static_cast<size_t>(kept.end() - lo) > step && !NodeLess(p, *(lo + (step - 1)))) {
        lo += step;
        step *= 2;
      }
      auto at = std::upper_bound(lo, lo + std::min<ptrdiff_t>(step, kept.end() - lo), p, NodeLess);
      if (at != kept.begin() && !NodeLess(*(at - 1), p)) return nullptr;  // twice
      order.insert(order.end(), from, at);
      order.push_back(p);
      from = at;
    }
    order.insert(order.end(), from, kept.end());
  } else {
    ++stats_.parts_full_merges;
    std::vector<const upstream::NodeBlock*> all;
    all.reserve(parted->parts.size());
    for (const Part& part : parted->parts) all.push_back(part.block.get());
    MergeBlocks(all, &order);
    for (size_t i = 1; i < order.size(); ++i) {
      if (!NodeLess(order[i - 1], order[i])) return nullptr;  // the same host and port twice
    }
  }
  std::vector<upstream::NodeBlockConstSharedPtr> blocks;
  blocks.reserve(parted->parts.size());
  for (const Part& part : parted->parts) blocks.push_back(part.block);
  parted->nodes = upstream::NodeList::Assemble(std::move(order), std::move(blocks));
  parted->summary.summarized = true;
  parted->summary.uniform = size != 0 && uniform;
  if (!parted->summary.uniform) parted->summary.weight = 0;
  parted->summary.sorted = true;  // merged in NodeOrder
  return parted;
}

void Directory::SetParted(Entry* e, PartedConstSharedPtr parted) {
  e->nodes = nullptr;
  e->parted = std::move(parted);
  SetHosts(e, {});
  Compose(e);
}

void Directory::Compose(Entry* e) {
  ReleaseRetired();
  const Parted& parted = *e->parted;
  auto set = std::make_shared<upstream::NodeSet>();
  set->nodes = parted.nodes;  // pointers: no node copied
  set->summary = parted.summary;
  e->built_at.clear();  // a list's next build copies nothing from these
  const upstream::NodeSetConstSharedPtr current = e->binding.slot->Load();
  bool same = false;
  if (current == e->built && e->built_parted) {
    // Both made of parts: the same pointers are the same nodes.
    same = current->nodes.pointers() == set->nodes.pointers();
  } else {
    same = upstream::SameNodes(*current, *set);
  }
  if (same) {
    if (current != e->built) {
      e->built = current;
      e->built_here = false;
      e->built_parted = false;
    }
    ++stats_.unchanged;
    return;
  }
  StoreBuilt(e, std::move(set));
  e->built_parted = true;
}

void Directory::StoreBuilt(Entry* e, std::shared_ptr<upstream::NodeSet> set) {
  upstream::NodeSetSlot& slot = *e->binding.slot;
  // A chash upstream's rings, built here (control thread) before the set is visible: the
  // workers take them as they are (upstream/chash.h).
  if (slot.chash() && !set->nodes.empty()) set->chash = upstream::ChashRings::Build(set->nodes);
  ++stats_.stored;
  // One line per set workers will switch to (bench/node_churn.sh counts them).
  spdlog::debug("{}: new node set stored ({} nodes)", e->binding.name, set->nodes.size());
  const upstream::NodeSetConstSharedPtr current = slot.Load();
  const bool recyclable = e->built_here && current == e->built;  // what Store() replaces
  e->built = set;
  e->built_here = true;
  upstream::NodeSetConstSharedPtr replaced = slot.Store(std::move(set));
  if (replaced != upstream::EmptyNodeSet()) {
    const bool mine = recyclable && replaced == current;
    retired_.push_back({std::move(replaced), mine});
  }
}

void Directory::Rebuild(Entry* e, const DiscoveredNodes* previous,
                        std::vector<std::string>* names) {
  // The previous build, when its list is known: its nodes of the same host and port are
  // copied rather than parsed and formatted again. The two lists are walked together in
  // (host, port) order; for lists in another order the walk finds fewer of them (those are
  // parsed, as in a first build), never a wrong one.
  const upstream::NodeSet* old = nullptr;
  if (previous != nullptr && e->built != nullptr && e->built_at.size() == previous->size()) {
    old = e->built.get();
  } else {
    previous = nullptr;
  }
  std::vector<int32_t> at;
  auto set = std::make_shared<upstream::NodeSet>();
  ReleaseRetired();  // the set this one replaces was usually dropped by every worker by now
  std::vector<upstream::Node> nodes;  // the set's one block
  if (e->nodes != nullptr && spare_.capacity() >= e->nodes->size()) {
    nodes = std::move(spare_);  // a released set's nodes, overwritten below
    spare_ = {};
  }
  size_t count = 0;  // nodes[count...] are a released set's, to overwrite or drop
  auto put = [&nodes, &count](auto&& node) -> upstream::Node& {
    if (count < nodes.size()) {
      nodes[count] = std::forward<decltype(node)>(node);
    } else {
      nodes.push_back(std::forward<decltype(node)>(node));
    }
    return nodes[count++];
  };
  upstream::NodeSummarizer summary;  // of the nodes put, in order
  // True while the set is node for node the old one (then it is not compared again).
  bool same = old != nullptr;
  if (e->nodes != nullptr) {
    const DiscoveredNodes& list = *e->nodes;
    nodes.reserve(list.size());  // no reallocation below: `summary` holds the node put last
    at.resize(list.size(), kDomain);
    size_t j = 0;  // in *previous
    for (size_t i = 0; i < list.size(); ++i) {
      base::CourtesyPoint();  // 10k nodes on a CPU the workers share
      const DiscoveredNode& n = list[i];
      int32_t from = kDomain;  // the old node to copy, if any
      bool matched = false;
      if (previous != nullptr) {
        while (j < previous->size()) {
          const int c = CompareNodeKey((*previous)[j], n);
          if (c > 0) break;  // n is new
          ++j;
          if (c == 0) {
            matched = true;
            from = e->built_at[j - 1];
            break;
          }
        }
      }
      const auto index = static_cast<int32_t>(count);
      if (from >= 0) {
        // The same IP literal and port: the parsed address and the texts are the old node's.
        upstream::Node& node = put(old->nodes[static_cast<size_t>(from)]);
        if (node.weight != n.weight || node.priority != n.priority) {
          node.weight = n.weight;
          node.priority = n.priority;
          same = false;
        } else if (from != index) {
          same = false;
        }
        summary.Add(node);
        at[i] = index;
        continue;
      }
      auto port = static_cast<uint16_t>(n.port == 0 ? kDefaultPort : n.port);
      upstream::Node node;
      if (!matched && ParseIpLiteral(n.host, port, &node)) {
        FinishNode(n, &node);
        summary.Add(put(std::move(node)));
        at[i] = index;
        same = false;
        continue;
      }
      // A domain name (matched ones were known to be): resolved through hosts_.
      if (names != nullptr && std::find(names->begin(), names->end(), n.host) == names->end()) {
        names->push_back(n.host);
        Host& host = hosts_[n.host];
        if (host.refs++ == 0 && !host.answered && host.lookup == 0) Lookup(n.host, &host);
      }
      auto it = hosts_.find(n.host);
      if (it == hosts_.end() || !it->second.have_addr) {
        same = false;  // not (yet) resolved: left out
        continue;
      }
      SetAddress(reinterpret_cast<const sockaddr*>(&it->second.addr), it->second.addr_len, port,
                 &node);
      FinishNode(n, &node);
      if (same && (static_cast<size_t>(index) >= old->nodes.size() ||
                   !upstream::SameNode(old->nodes[static_cast<size_t>(index)], node))) {
        same = false;
      }
      summary.Add(put(std::move(node)));
    }
  }
  nodes.resize(count);
  if (same && nodes.size() != old->nodes.size()) same = false;
  set->nodes = upstream::NodeList(std::move(nodes));
  e->built_at = std::move(at);
  const upstream::NodeSetConstSharedPtr current = e->binding.slot->Load();
  // When the slot holds the previous build, `same` says it all; otherwise compare.
  if (old != nullptr && current == e->built ? same : upstream::SameNodes(*current, *set)) {
    // The slot's set is this one's equal: the next build copies from it.
    if (current != e->built) {
      e->built = current;
      e->built_here = false;
      e->built_parted = false;
    }
    std::vector<upstream::Node> unused = set->nodes.TakeSoleBlock();
    if (unused.capacity() > spare_.capacity()) spare_ = std::move(unused);
    ++stats_.unchanged;
    return;
  }
  // What the workers' pickers read instead of the nodes (upstream/node_set.h), taken while
  // the nodes were put (no second pass over 10k nodes).
  set->summary = summary.Finish();
  StoreBuilt(e, std::move(set));
  e->built_parted = false;
}

void Directory::Lookup(const std::string& name, Host* host) {
  ++stats_.lookups;
  host->lookup =
      resolver_->Resolve(name, [this, name](const Resolution& r) { OnResolved(name, r); });
}

void Directory::OnResolved(const std::string& name, const Resolution& r) {
  base::IdleScope idle;  // the sets of every upstream using the name rebuilt
  auto it = hosts_.find(name);
  if (it == hosts_.end()) return;
  Host& host = it->second;
  host.lookup = 0;
  uint64_t now = uv_now(loop_);
  bool changed = !host.answered;
  host.answered = true;
  if (r.ok) {
    if (!host.have_addr || host.addr_len != r.addr_len ||
        std::memcmp(&host.addr, &r.addr, r.addr_len) != 0) {
      changed = true;
    }
    host.have_addr = true;
    host.addr = r.addr;
    host.addr_len = r.addr_len;
    if (host.failing) spdlog::info("node {}: resolves again", name);
    host.failing = false;
    uint64_t ttl_ms = uint64_t{r.ttl_seconds} * 1000;
    host.next_ms = now + std::clamp(ttl_ms, options_.min_refresh_ms, options_.max_refresh_ms);
  } else {
    if (!host.failing) {
      // As the blocking build used to say; a name that resolved before keeps its address.
      spdlog::warn("node {}: cannot resolve ({}), {}", name, r.error,
                   host.have_addr ? "keeping its last address" : "node skipped");
    }
    host.failing = true;
    host.next_ms = now + options_.retry_ms;
  }
  if (!changed) return;
  for (auto& [key, e] : entries_) {
    if (std::find(e.hosts.begin(), e.hosts.end(), name) != e.hosts.end()) Rebuild(&e);
  }
}

bool Directory::Answered(const Entry& e) const {
  if (e.parted != nullptr) return true;  // in parts: IP literals only
  if (e.nodes == nullptr) return false;  // the provider has not answered yet
  for (const std::string& name : e.hosts) {
    auto it = hosts_.find(name);
    if (it != hosts_.end() && !it->second.answered) return false;
  }
  return true;
}

bool Directory::ready() const {
  if (ready_) return true;
  if (!applied_) return false;
  for (const auto& [key, e] : entries_) {
    if (e.initial && !Answered(e)) return false;
  }
  for (const auto& [name, provider] : providers_) {
    if (!provider->ready()) return false;
  }
  ready_ = true;
  return true;
}

void Directory::Tick() {
  uint64_t now = uv_now(loop_);
  for (auto& [name, host] : hosts_) {
    if (host.lookup == 0 && host.answered && now >= host.next_ms) Lookup(name, &host);
  }
  ReleaseRetired();
}

void Directory::ReleaseRetired() {
  // use_count() == 1: only this list holds the set; no worker's picker nor request does, and
  // nothing can take a new reference (it is no longer in any slot).
  std::erase_if(retired_, [this](Retired& r) {
    if (r.set == nullptr) return true;
    if (r.set.use_count() != 1) return false;
    if (r.recyclable) {
      // A set made here (a NodeSet created non-const) that nobody else can reach: when it is
      // one block of its own (Rebuild's), its nodes stay, the next build overwrites them (one
      // pass over that memory, not two).
      std::vector<upstream::Node> nodes =
          const_cast<upstream::NodeSet&>(*r.set).nodes.TakeSoleBlock();
      if (nodes.capacity() > spare_.capacity()) spare_ = std::move(nodes);
    }
    return true;
  });
}

}  // namespace turnpike::discovery
