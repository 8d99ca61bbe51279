// ControlService: something the control thread hosts on its loop besides config reloads
// (the status endpoints, discovery and DNS; later health checks, the metrics exporter, an
// etcd watch).
//
// Control keeps a list of them: it starts each, in order, on its loop before the first
// config load, stops them all when shutdown begins (workers then drain with what they
// have), and /status/ready answers 200 only once every service is ready() (as well as every
// worker). A service never blocks the loop.
//
// Thread rules: every method runs on the control thread.
#pragma once

#include <uv.h>

#include <string_view>

#include "turnpike/status.h"

namespace turnpike::daemon {

class ControlService {
 public:
  virtual ~ControlService() = default;
  // For logs and /status/ready's error ("waiting for: <name>").
  virtual std::string_view name() const = 0;
  // Once, before the first config load. An error stops the daemon (exit code 1).
  virtual Status Start(uv_loop_t* loop) = 0;
  // Shutdown begins: close listeners and handles (the loop runs until their close callbacks
  // ran; the service is destroyed after that). Idempotent; also called when Start() failed.
  virtual void Stop() = 0;
  // Whether the daemon may report itself ready, as far as this service is concerned.
  virtual bool ready() const { return true; }
};

}  // namespace turnpike::daemon
