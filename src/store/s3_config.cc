#include "store/s3_config.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "model/spec_fields.h"
#include "store/object_store.h"

namespace cohort::store {

namespace {

constexpr std::string_view kScheme = "s3://";
// A connection file is a few lines; anything much larger is not one.
constexpr size_t kMaxConnectionFileBytes = 64 << 10;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// "192.168.5.4": four dot-separated groups of digits, which S3 refuses as a bucket name.
bool LooksLikeIpAddress(std::string_view name) {
  int groups = 0;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view group = name.substr(start, end - start);
    if (group.empty() || group.size() > 3) return false;
    for (char c : group) {
      if (c < '0' || c > '9') return false;
    }
    ++groups;
    start = end + 1;
  }
  return groups == 4;
}

// Why `name` is not a bucket name S3 allows, or "".
std::string BucketProblem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() < 3 || name.size() > 63) {
    return fmt::format("is {} characters long; S3 allows 3 to 63", name.size());
  }
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '.' && c != '-') {
      return "may hold only lower-case letters, digits, '.' and '-'";
    }
  }
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) {
    return "must start and end with a lower-case letter or a digit";
  }
  if (name.find("..") != std::string_view::npos) return "has two '.' in a row";
  if (LooksLikeIpAddress(name)) return "looks like an IP address";
  return "";
}

constexpr std::array<std::string_view, 6> kConnectionFields = {
    "endpoint", "region", "access_key", "secret_key", "session_token", "role_arn"};

std::string* ConnectionField(S3Connection& c, std::string_view name) {
  if (name == "endpoint") return &c.endpoint;
  if (name == "region") return &c.region;
  if (name == "access_key") return &c.access_key;
  if (name == "secret_key") return &c.secret_key;
  if (name == "session_token") return &c.session_token;
  if (name == "role_arn") return &c.role_arn;
  return nullptr;
}

// Why `endpoint` is not "http(s)://HOST[:PORT]", or "".
std::string EndpointProblem(std::string_view endpoint) {
  size_t host = 0;
  if (endpoint.starts_with("http://")) {
    host = 7;
  } else if (endpoint.starts_with("https://")) {
    host = 8;
  } else {
    return "must start with http:// or https://";
  }
  std::string_view rest = endpoint.substr(host);
  if (rest.empty() || rest.front() == '/' || rest.front() == ':') return "has no host";
  if (rest.find('@') != std::string_view::npos) {
    return "must not hold credentials: they go in access_key and secret_key";
  }
  for (char c : rest) {
    if (c == '/' || c == '?' || c == '#') {
      return "must be http(s)://HOST[:PORT] without a path: the bucket follows it";
    }
    if (static_cast<unsigned char>(c) <= ' ') return "holds a space or control character";
  }
  return "";
}

}  // namespace

std::string S3Location::ToString() const {
  return prefix.empty() ? fmt::format("s3://{}", bucket)
                        : fmt::format("s3://{}/{}", bucket, prefix);
}

StatusOr<S3Location> ParseS3Location(std::string_view url) {
  if (!url.starts_with(kScheme)) {
    return Status::InvalidArgument(
        fmt::format("store \"{}\": an S3 store is written s3://BUCKET/PREFIX", url.substr(0, 200)));
  }
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  S3Location location;
  location.bucket = std::string(rest.substr(0, slash));
  if (std::string problem = BucketProblem(location.bucket); !problem.empty()) {
    return Status::InvalidArgument(fmt::format("store \"{}\": the bucket name \"{}\" {}",
                                               url.substr(0, 200), location.bucket, problem));
  }
  if (slash == std::string_view::npos) return location;
  std::string_view prefix = rest.substr(slash + 1);
  // "s3://b/p/" and "s3://b/p" are the same place: objects under "p/".
  if (prefix.ends_with('/')) prefix.remove_suffix(1);
  if (prefix.empty()) return location;
  if (Status s = CheckKey(prefix); !s.ok()) {
    return Status::InvalidArgument(fmt::format("store \"{}\": the prefix is not a valid key: {}",
                                               url.substr(0, 200), s.message()));
  }
  location.prefix = std::string(prefix);
  return location;
}

std::string S3Connection::ToString() const {
  return fmt::format("endpoint {}, region {}, access key {}, secret key {}{}{}", endpoint, region,
                     access_key, secret_key.empty() ? "unset" : "set",
                     session_token.empty() ? "" : ", session token set",
                     role_arn.empty() ? "" : fmt::format(", role {}", role_arn));
}

StatusOr<S3Connection> ParseS3Connection(std::string_view yaml, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    // e.msg says what is wrong without quoting the text, which may hold the secret.
    return Status::InvalidArgument(
        fmt::format("{}: not YAML (line {}): {}", source, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) {
    return Status::InvalidArgument(fmt::format(
        "{}: must be a mapping of endpoint, region, access_key, secret_key, session_token, "
        "role_arn",
        source));
  }
  S3Connection c;
  std::vector<std::string> problems;
  for (const auto& entry : root) {
    std::string name = entry.first.IsScalar() ? entry.first.Scalar() : std::string("(not a name)");
    std::string* field = ConnectionField(c, name);
    if (field == nullptr) {
      problems.push_back(fmt::format("{}: unknown field; {}", name.substr(0, 100),
                                     UnknownFieldHint(name, kConnectionFields)));
      continue;
    }
    if (entry.second.IsNull()) continue;
    if (!entry.second.IsScalar()) {
      problems.push_back(fmt::format("{}: must be a string", name));
      continue;
    }
    *field = entry.second.Scalar();
  }
  for (std::string_view required : {"endpoint", "access_key", "secret_key"}) {
    if (ConnectionField(c, required)->empty()) {
      problems.push_back(fmt::format("{}: missing (or empty)", required));
    }
  }
  // "http://h:7480/" is "http://h:7480"
  if (c.endpoint.ends_with('/') && !c.endpoint.ends_with("//")) c.endpoint.pop_back();
  if (!c.endpoint.empty()) {
    if (std::string problem = EndpointProblem(c.endpoint); !problem.empty()) {
      // An endpoint with "user:password@" in it is not quoted: the password may be the secret.
      bool quotable = c.endpoint.find('@') == std::string::npos;
      problems.push_back(
          quotable ? fmt::format("endpoint: \"{}\" {}", c.endpoint.substr(0, 200), problem)
                   : fmt::format("endpoint: {}", problem));
    }
  }
  if (c.region.empty()) c.region = "us-east-1";
  for (char ch : c.region) {
    if (!IsLowerAlnum(ch) && ch != '-') {
      problems.push_back("region: may hold only lower-case letters, digits and '-'");
      break;
    }
  }
  if (!problems.empty()) {
    std::string message = fmt::format("{}: {}", source, problems.front());
    if (problems.size() > 1) message += fmt::format(" (and {} more)", problems.size() - 1);
    return Status::InvalidArgument(message, problems);
  }
  return c;
}

StatusOr<S3Connection> LoadS3Connection(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    int err = errno;
    std::string why =
        err == ELOOP ? "is a symbolic link; name the file itself" : std::strerror(err);
    return err == ENOENT
               ? Status::NotFound(fmt::format("S3 connection file {}: {}", path, why))
               : Status::InvalidArgument(fmt::format("S3 connection file {}: {}", path, why));
  }
  struct stat st {};
  std::string text;
  Status status;
  if (::fstat(fd, &st) != 0) {
    status = Status::Internal(fmt::format("S3 connection file {}: {}", path, std::strerror(errno)));
  } else if (!S_ISREG(st.st_mode)) {
    status =
        Status::InvalidArgument(fmt::format("S3 connection file {}: not a regular file", path));
  } else if ((st.st_mode & 077) != 0) {
    // It holds the secret key: another user must not read it, nor change where it points.
    status = Status::InvalidArgument(fmt::format(
        "S3 connection file {} has mode {:04o}; it holds a secret key and must be readable by its "
        "owner only: chmod 600 {}",
        path, st.st_mode & 07777, path));
  } else if (static_cast<size_t>(st.st_size) > kMaxConnectionFileBytes) {
    status = Status::InvalidArgument(fmt::format("S3 connection file {}: {} bytes, more than {}",
                                                 path, st.st_size, kMaxConnectionFileBytes));
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    text.resize(done);
  }
  ::close(fd);
  if (!status.ok()) return status;
  return ParseS3Connection(text, path);
}

}  // namespace cohort::store
