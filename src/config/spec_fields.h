// Validators for fields that several apisix.yaml objects share (ids, hosts, timeouts,
// metadata). Rules follow APISIX's schema_def (reference §1.2, §2.1, §3.1).
//
// Internal to config/. Control thread only.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/specs.h"
#include "config/yaml_util.h"

namespace turnpike::config {

// An object id: a string matching ^[a-zA-Z0-9-_.]+$ with 1-64 characters, or an integer
// >= 1. Returns the id normalized to a string (`1` -> "1").
std::optional<std::string> ReadId(const Field& f, Diagnostics& d);

// APISIX host_def: `*`, or an optional leading `*` followed by [0-9a-zA-Z-._[]:]+.
bool IsValidHost(std::string_view host);
// A string that passes IsValidHost (returned as written).
std::optional<std::string> ReadHost(const Field& f, Diagnostics& d);

// A host as ReadHost, lowercased (routes and services match hosts case-insensitively).
std::optional<std::string> ReadLowerHost(const Field& f, Diagnostics& d);

// An IPv4 or IPv6 address (IPv6 without brackets), optionally followed by `/prefix` with a
// prefix of 0-32 (IPv4) or 0-128 (IPv6) written without leading zeros.
bool IsValidIpOrCidr(std::string_view s);
// A string that passes IsValidIpOrCidr (returned as written).
std::optional<std::string> ReadIpOrCidr(const Field& f, Diagnostics& d);
// An IPv4 or IPv6 address; brackets around IPv6 are accepted and removed.
std::optional<std::string> ReadIp(const Field& f, Diagnostics& d);

// Reads a list of unique strings, each checked by `read_one`, appending them to `out`. Bad
// and repeated items are reported; the others are kept.
template <typename ReadOne>
void ReadUniqueList(const Field& f, Diagnostics& d, bool allow_empty, ReadOne read_one,
                    std::vector<std::string>* out) {
  if (!ExpectList(f, d)) return;
  if (!allow_empty && f.value.size() == 0) {
    d.Error(f.at(), f.path, "must not be empty");
    return;
  }
  for (const Field& item : ListItems(f.value, f.path)) {
    std::optional<std::string> v = read_one(item, d);
    if (!v) continue;
    if (std::find(out->begin(), out->end(), *v) != out->end()) {
      d.Error(item.at(), item.path, "duplicate item \"" + *v + "\"");
      continue;
    }
    out->push_back(std::move(*v));
  }
}

// `{connect, send, read}`: numbers > 0 (seconds), all three required. Other keys are
// ignored with a warning (the APISIX schema allows them).
std::optional<Timeout> ReadTimeout(const Field& f, Diagnostics& d);

using Labels = std::vector<std::pair<std::string, std::string>>;

// Metadata common to APISIX objects: name (1-256 chars), desc (<= 256), labels (map of
// strings of 1-256 characters without whitespace), create_time / update_time (integers).
// Returns false when `f.key` is none of these; otherwise validates the value (errors go to
// `d`) and stores the name and, when `labels` is given, the labels in file order.
bool CheckMetadataField(const Field& f, Diagnostics& d, std::string* name,
                        Labels* labels = nullptr);

// Records a "not supported yet, ignored" warning for `f`.
void WarnNotSupported(const Field& f, Diagnostics& d);

}  // namespace turnpike::config
