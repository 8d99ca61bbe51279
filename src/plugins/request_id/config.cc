#include "plugins/request_id/config.h"

#include "plugins/common/schema.h"

namespace turnpike::plugins::request_id {

StatusOr<Config> ParseConfig(const nlohmann::json& conf) {
  if (!conf.is_object()) return Status::Error(schema::WrongType("object", conf));
  Config c;
  if (auto it = conf.find("header_name"); it != conf.end()) {
    if (std::string e = schema::CheckString(*it, 0); !e.empty()) {
      return schema::Property("header_name", e);
    }
    c.header_name = it->get<std::string>();
  }
  if (auto it = conf.find("include_in_response"); it != conf.end()) {
    if (std::string e = schema::CheckBoolean(*it); !e.empty()) {
      return schema::Property("include_in_response", e);
    }
    c.include_in_response = it->get<bool>();
  }
  if (auto it = conf.find("algorithm"); it != conf.end()) {
    if (!it->is_string()) return schema::Property("algorithm", schema::WrongType("string", *it));
    const std::string& a = it->get_ref<const std::string&>();
    if (a == "uuid") {
      c.algorithm = Algorithm::kUuid;
    } else if (a == "nanoid") {
      c.algorithm = Algorithm::kNanoid;
    } else if (a == "range_id") {
      c.algorithm = Algorithm::kRangeId;
    } else if (a == "ksuid") {
      c.algorithm = Algorithm::kKsuid;
    } else if (a == "uuidv7") {
      c.algorithm = Algorithm::kUuidV7;
    } else {
      return schema::Property("algorithm", "matches none of the enum values");
    }
  }
  if (auto it = conf.find("range_id"); it != conf.end()) {
    if (!it->is_object()) return schema::Property("range_id", schema::WrongType("object", *it));
    if (auto len = it->find("length"); len != it->end()) {
      if (std::string e = schema::CheckInteger(*len, 6, INT32_MAX); !e.empty()) {
        return schema::Property("range_id", schema::PropertyText("length", e));
      }
      c.length = static_cast<size_t>(len->get<double>());
    }
    if (auto cs = it->find("char_set"); cs != it->end()) {
      if (std::string e = schema::CheckString(*cs, 6); !e.empty()) {
        return schema::Property("range_id", schema::PropertyText("char_set", e));
      }
      c.char_set = cs->get<std::string>();
    }
  }
  return c;
}

}  // namespace turnpike::plugins::request_id
