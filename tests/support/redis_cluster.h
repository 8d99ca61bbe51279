// A real Redis Cluster for tests: `masters` redis-server processes (cluster-enabled, no
// replicas, no persistence) on 127.0.0.1 and free ports, their cluster-config-files in a
// temporary directory, the 16384 slots split evenly (ADDSLOTSRANGE, SET-CONFIG-EPOCH, MEET:
// what `redis-cli --cluster create` does, without its one-second polls). Stopped by PID with
// the object. `cluster-require-full-coverage no`: with a master down, the others serve on.
//
// Also drives a slot migration step by step (IMPORTING/MIGRATING, MIGRATE, NODE), so clients
// see -ASK and then -MOVED, and kills and restarts a master (it comes back with its slots,
// from its config file, and no data).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/redis.h"

namespace turnpike::testing {

class RedisCluster {
 public:
  explicit RedisCluster(int masters = 3);

  // Starts the servers and forms the cluster; true once every node sees every slot served
  // (cluster_state:ok everywhere). False with error() when not within 10 s.
  bool Start();
  const std::string& error() const { return error_; }

  int size() const { return static_cast<int>(nodes_.size()); }
  RedisServer& node(int i) { return *nodes_[static_cast<size_t>(i)]; }
  int port(int i) const { return nodes_[static_cast<size_t>(i)]->port(); }
  int bus_port(int i) const { return bus_ports_[static_cast<size_t>(i)]; }
  const std::string& id(int i) const { return ids_[static_cast<size_t>(i)]; }
  // Every node as "127.0.0.1:<port>".
  std::vector<std::string> Addresses() const;

  // The hash slot of `key` (CLUSTER KEYSLOT) and the node that serves it now (as far as this
  // object moved slots).
  int Slot(const std::string& key);
  int OwnerOf(int slot) const { return owner_[static_cast<size_t>(slot)]; }
  // Runs `args` on the node serving `key` (redis-cli's raw answer).
  std::string KeyCommand(const std::string& key, const std::vector<std::string>& args);

  // A slot migration from the slot's owner to node `to`, in steps: Begin marks it
  // IMPORTING on `to` and MIGRATING on the owner (the owner now answers -ASK for keys it does
  // not hold), MoveKey moves one key, Finish gives the slot to `to` on every node (the old
  // owner now answers -MOVED). False with error() on a refusal.
  bool BeginMigration(int slot, int to);
  bool MoveKey(int slot, const std::string& key);
  bool FinishMigration(int slot);

  // Starts one more node, a replica of node `master`, and waits until it has synced; its
  // index, or -1 with error(). PromoteReplica records that `replica` took over every slot of
  // node `master` (after a failover the test waited for).
  int AddReplica(int master);
  void PromoteReplica(int replica, int master);

  // SIGKILL of node `i`; Restart brings it back on its port with its config file and waits
  // until it serves its slots again (other nodes may still be down).
  void Kill(int i);
  bool Restart(int i);

 private:
  std::vector<std::string> ServerArgs(int i) const;
  // Starts node `i` (first start or restart). A first start whose port was taken retries on
  // another port and another bus port: the test that took one may hold the other too.
  bool StartNode(int i);
  // Until every node (or only node `only`) sees every slot served by a node it knows.
  bool WaitUntilFormed(int only);

  TempDir dir_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<int> bus_ports_;  // the cluster bus of each node
  std::vector<std::string> ids_;
  std::vector<int> owner_;  // slot -> node index
  int migrating_to_ = -1;   // during a migration: its target
  std::string error_;
};

}  // namespace turnpike::testing
