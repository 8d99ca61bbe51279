#include "support/redis_cluster.h"

#include <chrono>
#include <thread>

#include "support/net.h"

namespace turnpike::testing {

RedisCluster::RedisCluster(int masters) : owner_(16384, -1) {
  for (int i = 0; i < masters; ++i) {
    nodes_.push_back(std::make_unique<RedisServer>());
    bus_ports_.push_back(FreePort());
  }
}

std::vector<std::string> RedisCluster::ServerArgs(int i) const {
  std::vector<std::string> args;
  auto set = [&args](std::string name, std::string value) {
    args.push_back("--" + std::move(name));
    args.push_back(std::move(value));
  };
  set("cluster-enabled", "yes");
  set("cluster-config-file", dir_.File("nodes-" + std::to_string(port(i)) + ".conf"));
  set("dir", dir_.path());
  // Also the delay before a master that just (re)joined serves (at least 500 ms), and what
  // a failover waits for.
  set("cluster-node-timeout", "1000");
  set("cluster-require-full-coverage", "no");
  // The bus port would be port + 10000, which may be taken or past 65535.
  set("cluster-port", std::to_string(bus_ports_[static_cast<size_t>(i)]));
  // A replica syncs at once (not 5 s later, in case more replicas come).
  set("repl-diskless-sync-delay", "0");
  return args;
}

bool RedisCluster::StartNode(int i) {
  return node(i).StartWith([this, i, planned = port(i)](int port) {
    if (port != planned) bus_ports_[static_cast<size_t>(i)] = FreePort();  // a retry
    return ServerArgs(i);  // names node(i).port(), already `port`
  });
}

std::vector<std::string> RedisCluster::Addresses() const {
  std::vector<std::string> out;
  for (int i = 0; i < size(); ++i) out.push_back("127.0.0.1:" + std::to_string(port(i)));
  return out;
}

bool RedisCluster::Start() {
  if (!dir_.ok()) {
    error_ = "no temporary directory";
    return false;
  }
  const int n = size();
  for (int i = 0; i < n; ++i) {
    if (!StartNode(i)) {
      error_ = "node " + std::to_string(i) + ": " + node(i).error();
      return false;
    }
    ids_.push_back(node(i).Command({"CLUSTER", "MYID"}));
    int first = 16384 * i / n;
    int last = 16384 * (i + 1) / n - 1;
    std::string r =
        node(i).Command({"CLUSTER", "ADDSLOTSRANGE", std::to_string(first), std::to_string(last)});
    if (r != "OK") {
      error_ = "ADDSLOTSRANGE on node " + std::to_string(i) + ": " + r;
      return false;
    }
    for (int s = first; s <= last; ++s) owner_[static_cast<size_t>(s)] = i;
    // Distinct epochs, so the nodes agree on slot owners without a collision round.
    node(i).Command({"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)});
  }
  for (int i = 1; i < n; ++i) {
    std::string r = node(0).Command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(port(i)),
                                     std::to_string(bus_ports_[static_cast<size_t>(i)])});
    if (r != "OK") {
      error_ = "MEET: " + r;
      return false;
    }
  }
  return WaitUntilFormed(-1);
}

bool RedisCluster::WaitUntilFormed(int only) {
  const std::string known = "cluster_known_nodes:" + std::to_string(size());
  for (int attempt = 0; attempt < 500; ++attempt) {
    bool ok = true;
    for (int i = 0; i < size() && ok; ++i) {
      if (only >= 0 && i != only) continue;
      std::string info = node(i).Command({"CLUSTER", "INFO"});
      ok = info.find("cluster_state:ok") != std::string::npos &&
           info.find("cluster_slots_assigned:16384") != std::string::npos &&
           info.find(known) != std::string::npos;
    }
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  error_ = "the cluster did not form within 10 s:";
  for (int i = 0; i < size(); ++i) {
    std::string info = node(i).Command({"CLUSTER", "INFO"});
    error_ += "\nnode " + std::to_string(i) + ": " + info.substr(0, info.find("cluster_size")) +
              node(i).Command({"CLUSTER", "NODES"});
  }
  return false;
}

int RedisCluster::Slot(const std::string& key) {
  return std::stoi(node(0).Command({"CLUSTER", "KEYSLOT", key}));
}

std::string RedisCluster::KeyCommand(const std::string& key, const std::vector<std::string>& args) {
  return node(OwnerOf(Slot(key))).Command(args);
}

bool RedisCluster::BeginMigration(int slot, int to) {
  int from = OwnerOf(slot);
  std::string s = std::to_string(slot);
  std::string a = node(to).Command({"CLUSTER", "SETSLOT", s, "IMPORTING", id(from)});
  std::string b = node(from).Command({"CLUSTER", "SETSLOT", s, "MIGRATING", id(to)});
  if (a != "OK" || b != "OK") {
    error_ = "SETSLOT IMPORTING/MIGRATING: " + a + " / " + b;
    return false;
  }
  migrating_to_ = to;
  return true;
}

bool RedisCluster::MoveKey(int slot, const std::string& key) {
  std::string r =
      node(OwnerOf(slot))
          .Command({"MIGRATE", "127.0.0.1", std::to_string(port(migrating_to_)), key, "0", "5000"});
  if (r != "OK") {
    error_ = "MIGRATE " + key + ": " + r;
    return false;
  }
  return true;
}

bool RedisCluster::FinishMigration(int slot) {
  int to = migrating_to_;
  std::string s = std::to_string(slot);
  // The target first, then the old owner, then the rest (as redis-cli does).
  std::vector<int> order = {to, OwnerOf(slot)};
  for (int i = 0; i < size(); ++i) {
    if (i != to && i != OwnerOf(slot)) order.push_back(i);
  }
  for (int i : order) {
    std::string r = node(i).Command({"CLUSTER", "SETSLOT", s, "NODE", id(to)});
    if (r != "OK") {
      error_ = "SETSLOT NODE on node " + std::to_string(i) + ": " + r;
      return false;
    }
  }
  owner_[static_cast<size_t>(slot)] = to;
  migrating_to_ = -1;
  return true;
}

int RedisCluster::AddReplica(int master) {
  const int i = size();
  nodes_.push_back(std::make_unique<RedisServer>());
  bus_ports_.push_back(FreePort());
  if (!StartNode(i)) {
    error_ = "replica: " + node(i).error();
    return -1;
  }
  ids_.push_back(node(i).Command({"CLUSTER", "MYID"}));
  node(0).Command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(port(i)),
                   std::to_string(bus_ports_[static_cast<size_t>(i)])});
  if (!WaitUntilFormed(-1)) return -1;
  std::string r = node(i).Command({"CLUSTER", "REPLICATE", id(master)});
  if (r != "OK") {
    error_ = "CLUSTER REPLICATE: " + r;
    return -1;
  }
  for (int attempt = 0; attempt < 500; ++attempt) {
    if (node(i).Command({"INFO", "replication"}).find("master_link_status:up") !=
        std::string::npos) {
      return i;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  error_ = "the replica did not sync within 10 s";
  return -1;
}

void RedisCluster::PromoteReplica(int replica, int master) {
  for (int& owner : owner_) {
    if (owner == master) owner = replica;
  }
}

void RedisCluster::Kill(int i) { node(i).Kill(); }

bool RedisCluster::Restart(int i) {
  if (!StartNode(i)) {
    error_ = node(i).error();
    return false;
  }
  return WaitUntilFormed(i);
}

}  // namespace turnpike::testing
