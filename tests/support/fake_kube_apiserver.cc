#include "support/fake_kube_apiserver.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "support/net.h"

namespace turnpike::testing {
namespace {

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 410:
      return "Gone";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
  }
  return "Status";
}

// A watch event's line: {"object": .., "type": ..} as nlohmann writes it (keys in order),
// written from the object in place (no copy into a temporary document).
std::string EventLine(const std::string& type, const nlohmann::json& object) {
  return "{\"object\":" + object.dump() + ",\"type\":" + nlohmann::json(type).dump() + "}\n";
}

nlohmann::json StatusObject(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

bool SendJson(int fd, int status, const nlohmann::json& body) {
  std::string text = body.dump();
  std::string out =
      "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
      "\r\n\r\n" + text;
  return SendAll(fd, out);
}

bool SendChunk(int fd, const std::string& data) {
  char size[32];
  snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return SendAll(fd, std::string(size) + data + "\r\n");
}

const char* KindName(FakeKubeApiServer::Kind k) {
  return k == FakeKubeApiServer::Kind::kEndpoints ? "Endpoints" : "EndpointSlice";
}

std::string Meta(const nlohmann::json& obj, const char* key) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  auto v = md->find(key);
  return v != md->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string Label(const nlohmann::json& obj, const std::string& key, bool* has) {
  *has = false;
  auto md = obj.find("metadata");
  if (md == obj.end()) return "";
  auto labels = md->find("labels");
  if (labels == md->end() || !labels->is_object()) return "";
  auto v = labels->find(key);
  if (v == labels->end() || !v->is_string()) return "";
  *has = true;
  return v->get<std::string>();
}

// A parsed label or field selector: every requirement must hold.
struct Requirement {
  enum Op { kEq, kNe, kExists, kNotExists, kIn, kNotIn } op;
  std::string key;
  std::vector<std::string> values;
};

// Splits at commas outside parentheses.
std::vector<std::string> SplitTop(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool ParseSelector(const std::string& text, bool field, std::vector<Requirement>* out) {
  out->clear();
  if (Trim(text).empty()) return true;
  for (const std::string& raw : SplitTop(text)) {
    std::string r = Trim(raw);
    if (r.empty()) return false;
    Requirement q;
    size_t p;
    if ((p = r.find("!=")) != std::string::npos) {
      q.op = Requirement::kNe;
      q.key = Trim(r.substr(0, p));
      q.values = {Trim(r.substr(p + 2))};
    } else if ((p = r.find("==")) != std::string::npos) {
      q.op = Requirement::kEq;
      q.key = Trim(r.substr(0, p));
      q.values = {Trim(r.substr(p + 2))};
    } else if ((p = r.find('=')) != std::string::npos) {
      q.op = Requirement::kEq;
      q.key = Trim(r.substr(0, p));
      q.values = {Trim(r.substr(p + 1))};
    } else if (!field && (p = r.find(" notin ")) != std::string::npos) {
      q.op = Requirement::kNotIn;
      q.key = Trim(r.substr(0, p));
    } else if (!field && (p = r.find(" in ")) != std::string::npos) {
      q.op = Requirement::kIn;
      q.key = Trim(r.substr(0, p));
    } else if (!field && r[0] == '!') {
      q.op = Requirement::kNotExists;
      q.key = Trim(r.substr(1));
    } else if (!field) {
      q.op = Requirement::kExists;
      q.key = r;
    } else {
      return false;
    }
    if (q.op == Requirement::kIn || q.op == Requirement::kNotIn) {
      size_t open = r.find('('), close = r.rfind(')');
      if (open == std::string::npos || close == std::string::npos || close < open) return false;
      for (const std::string& v : SplitTop(r.substr(open + 1, close - open - 1))) {
        q.values.push_back(Trim(v));
      }
    }
    if (q.key.empty()) return false;
    if (field && q.key != "metadata.namespace" && q.key != "metadata.name") return false;
    out->push_back(std::move(q));
  }
  return true;
}

bool Matches(const nlohmann::json& obj, const std::vector<Requirement>& reqs, bool field) {
  for (const Requirement& q : reqs) {
    bool has = true;
    std::string v = field ? Meta(obj, q.key == "metadata.name" ? "name" : "namespace")
                          : Label(obj, q.key, &has);
    bool in = std::find(q.values.begin(), q.values.end(), v) != q.values.end();
    switch (q.op) {
      case Requirement::kEq:
        if (!has || v != q.values[0]) return false;
        break;
      case Requirement::kNe:
        if (has && v == q.values[0]) return false;
        break;
      case Requirement::kExists:
        if (!has) return false;
        break;
      case Requirement::kNotExists:
        if (has) return false;
        break;
      case Requirement::kIn:
        if (!has || !in) return false;
        break;
      case Requirement::kNotIn:
        if (has && in) return false;
        break;
    }
  }
  return true;
}

}  // namespace

struct FakeKubeApiServer::Request {
  std::string method, target, path, authorization;
  std::map<std::string, std::string> query;
  std::string Arg(const std::string& k) const {
    auto it = query.find(k);
    return it == query.end() ? "" : it->second;
  }
  bool Has(const std::string& k) const { return query.count(k) != 0; }
};

FakeKubeApiServer::FakeKubeApiServer(Options options)
    : options_(std::move(options)), token_(options_.token) {}

FakeKubeApiServer::~FakeKubeApiServer() { Stop(); }

bool FakeKubeApiServer::Start() {
  if (listen_fd_ >= 0) return true;
  int fd = ListenLoopback(port_, &port_);
  if (fd < 0) return false;
  listen_fd_ = fd;
  stop_ = false;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return true;
}

void FakeKubeApiServer::Stop() {
  if (listen_fd_ < 0) return;
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }
  cv_.notify_all();
  if (accept_thread_.joinable()) accept_thread_.join();
  ::close(listen_fd_);
  listen_fd_ = -1;
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void FakeKubeApiServer::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeKubeApiServer::Serve(int fd) {
  std::string in;
  char buf[8192];
  while (!stop_) {
    size_t end = in.find("\r\n\r\n");
    if (end == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      int ready = ::poll(&p, 1, 20);
      // A signal (the churn bench's SIGUSR1/SIGUSR2) interrupts the wait: wait again rather
      // than fall through into a recv that blocks past stop_.
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
      if (ready < 0) break;
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      continue;
    }
    std::string head = in.substr(0, end);
    in.erase(0, end + 4);
    Request req;
    size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) break;
    req.method = head.substr(0, sp1);
    req.target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) {
      std::string qs = req.target.substr(q + 1);
      size_t pos = 0;
      while (pos <= qs.size()) {
        size_t amp = qs.find('&', pos);
        std::string kv = qs.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
        size_t eq = kv.find('=');
        if (!kv.empty()) {
          req.query[PercentDecode(kv.substr(0, eq))] =
              eq == std::string::npos ? "" : PercentDecode(kv.substr(eq + 1));
        }
        if (amp == std::string::npos) break;
        pos = amp + 1;
      }
    }
    size_t line = 0;
    uint64_t content_length = 0;
    while ((line = head.find("\r\n", line)) != std::string::npos) {
      line += 2;
      size_t colon = head.find(':', line);
      size_t eol = head.find("\r\n", line);
      if (colon == std::string::npos || (eol != std::string::npos && colon > eol)) continue;
      std::string name = head.substr(line, colon - line);
      std::string value =
          Trim(head.substr(colon + 1, eol == std::string::npos ? eol : eol - colon - 1));
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      if (name == "authorization") req.authorization = value;
      if (name == "content-length") content_length = std::stoull(value);
    }
    // A body (none expected) is read and ignored.
    while (in.size() < content_length) {
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    in.erase(0, std::min<size_t>(in.size(), content_length));
    if (!Handle(fd, req)) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  fds_.erase(std::remove(fds_.begin(), fds_.end(), fd), fds_.end());
  ::close(fd);
}

bool FakeKubeApiServer::Handle(int fd, const Request& req) {
  Seen seen{req.method, req.target, req.authorization, false, 0};
  std::string watch = req.Arg("watch");
  seen.watch = watch == "true" || watch == "1";
  auto answer = [&](int status, const nlohmann::json& body) {
    seen.status = status;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(seen);
    }
    return SendJson(fd, status, body);
  };
  std::string token;
  int fail;
  {
    std::lock_guard<std::mutex> lock(mu_);
    token = token_;
    fail = fail_status_;
  }
  if (!token.empty() && req.authorization != "Bearer " + token) {
    return answer(401, StatusObject(401, "Unauthorized", "Unauthorized"));
  }
  if (fail != 0) return answer(fail, StatusObject(fail, "InternalError", "failing on purpose"));
  if (req.method != "GET") {
    return answer(405, StatusObject(405, "MethodNotAllowed", "only GET is served"));
  }
  // /api/v1[/namespaces/<ns>]/endpoints, /apis/discovery.k8s.io/v1[/namespaces/<ns>]/endpointslices
  std::string rest, ns;
  Kind kind;
  if (req.path.rfind("/api/v1/", 0) == 0) {
    rest = req.path.substr(8);
    kind = Kind::kEndpoints;
  } else if (req.path.rfind("/apis/discovery.k8s.io/v1/", 0) == 0) {
    rest = req.path.substr(26);
    kind = Kind::kEndpointSlices;
  } else {
    return answer(404, StatusObject(404, "NotFound", "the server could not find the resource"));
  }
  if (rest.rfind("namespaces/", 0) == 0) {
    size_t slash = rest.find('/', 11);
    if (slash == std::string::npos) return answer(404, StatusObject(404, "NotFound", "no such"));
    ns = rest.substr(11, slash - 11);
    rest = rest.substr(slash + 1);
  }
  std::string plural = kind == Kind::kEndpoints ? "endpoints" : "endpointslices";
  if (rest != plural) {
    return answer(404, StatusObject(404, "NotFound", "the server could not find the resource"));
  }
  std::vector<Requirement> labels, fields;
  if (!ParseSelector(req.Arg("labelSelector"), false, &labels) ||
      !ParseSelector(req.Arg("fieldSelector"), true, &fields)) {
    return answer(400, StatusObject(400, "BadRequest", "unable to parse requirement"));
  }
  size_t index;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen.status = 200;  // a 410 below corrects it
    seen_.push_back(seen);
    index = seen_.size() - 1;
  }
  if (seen.watch) return ServeWatch(fd, req, kind, ns, index);
  return ServeList(fd, req, kind, ns, index);
}

bool FakeKubeApiServer::ServeList(int fd, const Request& req, Kind kind, const std::string& ns,
                                  size_t index) {
  std::vector<Requirement> labels, fields;
  ParseSelector(req.Arg("labelSelector"), false, &labels);
  ParseSelector(req.Arg("fieldSelector"), true, &fields);
  size_t limit = 0;
  if (req.Has("limit")) limit = std::stoul(req.Arg("limit"));
  size_t offset = 0;
  nlohmann::json body;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // continue tokens: "<compactions>/<offset>", expired by a later Compact().
    std::string cont = req.Arg("continue");
    if (!cont.empty()) {
      size_t slash = cont.find('/');
      uint64_t gen = std::stoull(cont.substr(0, slash));
      offset = std::stoul(cont.substr(slash + 1));
      if (gen != compactions_) {
        seen_[index].status = 410;
        return SendJson(fd, 410,
                        StatusObject(410, "Expired",
                                     "The provided continue parameter is too old to display a "
                                     "consistent list result."));
      }
    }
    std::vector<const nlohmann::json*> items;
    for (const auto& [k, shared] : objects_) {
      const nlohmann::json& obj = *shared;
      if (k.first != kind) continue;
      if (!ns.empty() && Meta(obj, "namespace") != ns) continue;
      if (!Matches(obj, labels, false) || !Matches(obj, fields, true)) continue;
      items.push_back(&obj);
    }
    body = {{"kind", std::string(KindName(kind)) + "List"},
            {"apiVersion", kind == Kind::kEndpoints ? "v1" : "discovery.k8s.io/v1"},
            {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
            {"items", nlohmann::json::array()}};
    size_t end = limit == 0 ? items.size() : std::min(items.size(), offset + limit);
    for (size_t i = offset; i < end; ++i) body["items"].push_back(*items[i]);
    if (end < items.size()) {
      body["metadata"]["continue"] = std::to_string(compactions_) + "/" + std::to_string(end);
      body["metadata"]["remainingItemCount"] = items.size() - end;
    }
    ++lists_;
  }
  return SendJson(fd, 200, body);
}

bool FakeKubeApiServer::ServeWatch(int fd, const Request& req, Kind kind, const std::string& ns,
                                   size_t index) {
  std::vector<Requirement> labels, fields;
  ParseSelector(req.Arg("labelSelector"), false, &labels);
  ParseSelector(req.Arg("fieldSelector"), true, &fields);
  bool bookmarks = req.Arg("allowWatchBookmarks") == "true";
  int timeout_s = req.Has("timeoutSeconds") ? std::stoi(req.Arg("timeoutSeconds")) : 1800;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string rv_arg = req.Arg("resourceVersion");
  std::unique_lock<std::mutex> lock(mu_);
  auto wanted = [&](const nlohmann::json& obj) {
    return (ns.empty() || Meta(obj, "namespace") == ns) && Matches(obj, labels, false) &&
           Matches(obj, fields, true);
  };
  std::vector<std::string> initial;
  size_t next = history_.size();
  int64_t covered = rv_;  // the last version the stream has sent (or skipped)
  if (rv_arg.empty() || rv_arg == "0") {
    for (const auto& [k, obj] : objects_) {
      if (k.first == kind && wanted(*obj)) {
        initial.push_back(EventLine("ADDED", *obj));
      }
    }
  } else {
    int64_t from = std::stoll(rv_arg);
    if (from < compacted_rv_) {
      std::string msg =
          "too old resource version: " + rv_arg + " (" + std::to_string(compacted_rv_) + ")";
      if (options_.gone_as_http_status) {
        seen_[index].status = 410;
        lock.unlock();
        return SendJson(fd, 410, StatusObject(410, "Expired", msg));
      }
      lock.unlock();
      std::string head =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
      return SendAll(fd, head) &&
             SendChunk(fd, nlohmann::json{{"type", "ERROR"},
                                          {"object", StatusObject(410, "Expired", msg)}}
                                   .dump() +
                               "\n") &&
             SendAll(fd, "0\r\n\r\n");
    }
    next = 0;
    while (next < history_.size() && history_[next].rv <= from) ++next;
    covered = from;
  }
  ++watches_;
  const auto mine = open_covered_.emplace(watches_, covered).first;  // this watch, while open
  uint64_t expire = expire_gen_, end = end_gen_, bookmark = bookmark_gen_;
  // `next` indexes history_, from which a Compact() drops what every open watch has sent: the
  // stream then finds its place again after the last version it covered.
  uint64_t compactions = compactions_;
  lock.unlock();
  bool ok = SendAll(fd,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n");
  for (const std::string& e : initial) ok = ok && SendChunk(fd, e);
  auto last_bookmark = std::chrono::steady_clock::now();
  bool clean_end = false;
  lock.lock();
  while (ok && !stop_) {
    std::vector<std::string> out;
    if (compactions != compactions_) {
      compactions = compactions_;
      next = 0;
      while (next < history_.size() && history_[next].rv <= covered) ++next;
    }
    for (; next < history_.size(); ++next) {
      const Event& e = history_[next];
      covered = e.rv;
      if (e.kind == kind && wanted(*e.object)) {
        out.push_back(e.line);
      }
    }
    mine->second = covered;
    bool send_bookmark = false;
    auto now = std::chrono::steady_clock::now();
    if (bookmark != bookmark_gen_) {
      bookmark = bookmark_gen_;
      send_bookmark = bookmarks;
    }
    if (bookmarks && options_.bookmark_interval_ms > 0 &&
        now - last_bookmark >= std::chrono::milliseconds(options_.bookmark_interval_ms)) {
      send_bookmark = true;
    }
    if (send_bookmark) {
      last_bookmark = now;
      out.push_back(
          nlohmann::json{{"type", "BOOKMARK"},
                         {"object",
                          {{"kind", KindName(kind)},
                           {"apiVersion", kind == Kind::kEndpoints ? "v1" : "discovery.k8s.io/v1"},
                           {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}}}
              .dump() +
          "\n");
    }
    bool expired = expire != expire_gen_;
    bool ended = end != end_gen_ || now >= deadline;
    if (!out.empty() || expired || ended) {
      lock.unlock();
      for (const std::string& e : out) ok = ok && SendChunk(fd, e);
      if (ok && expired) {
        ok = SendChunk(
            fd, nlohmann::json{{"type", "ERROR"},
                               {"object", StatusObject(410, "Expired", "too old resource version")}}
                        .dump() +
                    "\n");
      }
      lock.lock();
      if (expired || ended) {
        clean_end = ok;
        break;
      }
      continue;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  open_covered_.erase(mine);
  lock.unlock();
  if (clean_end) return SendAll(fd, "0\r\n\r\n");
  return false;
}

int64_t FakeKubeApiServer::Record(Kind kind, const std::string& type, nlohmann::json object) {
  int64_t rv = ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv);
  std::string key = Meta(object, "namespace") + "/" + Meta(object, "name");
  // The event's line written once, and the object shared between the event and objects_,
  // without a copy: bench/fake_kube_churn makes ten changes a second of a 250-endpoint slice
  // on the load generator's CPU.
  std::string line = EventLine(type, object);
  auto shared = std::make_shared<const nlohmann::json>(std::move(object));
  if (type == "DELETED") {
    objects_.erase({kind, key});
  } else {
    objects_[{kind, key}] = shared;
  }
  history_.push_back(Event{rv, kind, std::move(shared), std::move(line)});
  cv_.notify_all();
  return rv;
}

int64_t FakeKubeApiServer::Apply(Kind kind, nlohmann::json object) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = Meta(object, "namespace") + "/" + Meta(object, "name");
  bool exists = objects_.count({kind, key}) != 0;
  return Record(kind, exists ? "MODIFIED" : "ADDED", std::move(object));
}

int64_t FakeKubeApiServer::Delete(Kind kind, const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find({kind, ns + "/" + name});
  if (it == objects_.end()) return 0;
  nlohmann::json last = *it->second;
  return Record(kind, "DELETED", std::move(last));
}

void FakeKubeApiServer::Compact() {
  std::lock_guard<std::mutex> lock(mu_);
  compacted_rv_ = rv_;
  ++compactions_;
  // New watches from before now get 410. An event that an open watch has not sent yet stays,
  // as a real API server's compaction never cuts an open watch short: cleared at once, a
  // change applied just before (fake_kube_churn compacts right after its 100th) was lost to
  // the watch, which kept the slice's old endpoints while their block came back elsewhere:
  // every node of that block twice in the gateway's set.
  int64_t sent_by_all = rv_;
  for (const auto& [id, covered] : open_covered_) sent_by_all = std::min(sent_by_all, covered);
  std::erase_if(history_, [sent_by_all](const Event& e) { return e.rv <= sent_by_all; });
}

void FakeKubeApiServer::ExpireWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  ++expire_gen_;
  cv_.notify_all();
}

void FakeKubeApiServer::EndWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  ++end_gen_;
  cv_.notify_all();
}

void FakeKubeApiServer::SendBookmarks() {
  std::lock_guard<std::mutex> lock(mu_);
  ++bookmark_gen_;
  cv_.notify_all();
}

void FakeKubeApiServer::set_token(std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
}

void FakeKubeApiServer::set_fail_status(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_status_ = status;
}

int64_t FakeKubeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

std::vector<FakeKubeApiServer::Seen> FakeKubeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_;
}

int FakeKubeApiServer::lists() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lists_;
}

int FakeKubeApiServer::watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watches_;
}

int FakeKubeApiServer::open_watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(open_covered_.size());
}

bool FakeKubeApiServer::WaitForOpenWatches(int n, std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (open_watches() < n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

nlohmann::json FakeKubeApiServer::Endpoints(const std::string& ns, const std::string& name,
                                            const std::vector<std::string>& ips,
                                            const std::vector<Port>& ports,
                                            const std::vector<std::string>& not_ready_ips,
                                            const std::map<std::string, std::string>& labels) {
  nlohmann::json md = {{"namespace", ns}, {"name", name}};
  if (!labels.empty()) md["labels"] = labels;
  nlohmann::json obj = {{"kind", "Endpoints"}, {"apiVersion", "v1"}, {"metadata", md}};
  if (ips.empty() && not_ready_ips.empty()) return obj;
  nlohmann::json subset = nlohmann::json::object();
  nlohmann::json p = nlohmann::json::array();
  for (const Port& port : ports) {
    nlohmann::json one = {{"port", port.port}, {"protocol", "TCP"}};
    if (!port.name.empty()) one["name"] = port.name;
    p.push_back(one);
  }
  if (!ips.empty()) {
    subset["addresses"] = nlohmann::json::array();
    for (const std::string& ip : ips) subset["addresses"].push_back({{"ip", ip}});
  }
  if (!not_ready_ips.empty()) {
    subset["notReadyAddresses"] = nlohmann::json::array();
    for (const std::string& ip : not_ready_ips) subset["notReadyAddresses"].push_back({{"ip", ip}});
  }
  subset["ports"] = p;
  obj["subsets"] = nlohmann::json::array({subset});
  return obj;
}

nlohmann::json FakeKubeApiServer::EndpointSlice(const std::string& ns, const std::string& name,
                                                const std::string& service,
                                                const std::vector<SliceEndpoint>& endpoints,
                                                const std::vector<Port>& ports,
                                                const std::map<std::string, std::string>& labels) {
  nlohmann::json l = labels;
  if (l.is_null()) l = nlohmann::json::object();
  l["kubernetes.io/service-name"] = service;
  nlohmann::json obj = {{"kind", "EndpointSlice"},
                        {"apiVersion", "discovery.k8s.io/v1"},
                        {"metadata", {{"namespace", ns}, {"name", name}, {"labels", l}}},
                        {"addressType", "IPv4"},
                        {"endpoints", nlohmann::json::array()},
                        {"ports", nlohmann::json::array()}};
  for (const SliceEndpoint& e : endpoints) {
    obj["endpoints"].push_back(
        {{"addresses", {e.ip}}, {"conditions", {{"ready", e.ready}, {"serving", e.ready}}}});
  }
  for (const Port& port : ports) {
    // The EndpointSlice controller writes name "" for an unnamed Service port.
    obj["ports"].push_back({{"name", port.name}, {"port", port.port}, {"protocol", "TCP"}});
  }
  return obj;
}

}  // namespace turnpike::testing
