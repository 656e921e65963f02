#include "store/s3_xml.h"

#include <expat.h>
#include <fmt/format.h>

#include <charconv>
#include <functional>

namespace cohort::store {

namespace {

// Each element's path from the root ("ListBucketResult/Contents/Key") and its text, in the
// order elements end: children before their parent.
using XmlElementEnd = std::function<void(const std::string& path, const std::string& text)>;

struct XmlWalk {
  std::string path;
  std::vector<size_t> ends;  // where each open element's name starts in `path`
  std::string text;
  XmlElementEnd on_end;
};

void XMLCALL OnXmlStart(void* data, const XML_Char* name, const XML_Char**) {
  auto* walk = static_cast<XmlWalk*>(data);
  walk->ends.push_back(walk->path.size());
  if (!walk->path.empty()) walk->path += '/';
  walk->path += name;
  walk->text.clear();
}

void XMLCALL OnXmlEnd(void* data, const XML_Char*) {
  auto* walk = static_cast<XmlWalk*>(data);
  walk->on_end(walk->path, walk->text);
  walk->path.resize(walk->ends.back());
  walk->ends.pop_back();
  walk->text.clear();
}

void XMLCALL OnXmlText(void* data, const XML_Char* s, int len) {
  static_cast<XmlWalk*>(data)->text.append(s, static_cast<size_t>(len));
}

Status WalkXml(std::string_view xml, std::string_view what, XmlElementEnd on_end) {
  XML_Parser parser = XML_ParserCreate("UTF-8");
  if (parser == nullptr) return Status::Internal("out of memory for an XML parser");
  XmlWalk walk{.path = "", .ends = {}, .text = "", .on_end = std::move(on_end)};
  XML_SetUserData(parser, &walk);
  XML_SetElementHandler(parser, OnXmlStart, OnXmlEnd);
  XML_SetCharacterDataHandler(parser, OnXmlText);
  Status status;
  if (XML_Parse(parser, xml.data(), static_cast<int>(xml.size()), XML_TRUE) == XML_STATUS_ERROR) {
    status = Status::Internal(
        fmt::format("the object store's {} is not well-formed XML (line {}): {}", what,
                    XML_GetCurrentLineNumber(parser), XML_ErrorString(XML_GetErrorCode(parser))));
  }
  XML_ParserFree(parser);
  return status;
}

}  // namespace

std::optional<S3Error> ParseS3Error(std::string_view xml) {
  if (xml.find("<Error") == std::string_view::npos) return std::nullopt;
  S3Error error;
  bool is_error = false;
  Status s = WalkXml(xml, "error", [&](const std::string& path, const std::string& text) {
    // S3 writes <Error>; STS (and IAM) <ErrorResponse><Error>.
    std::string_view in_error = path;
    if (in_error.starts_with("ErrorResponse/")) in_error.remove_prefix(14);
    if (in_error == "Error") is_error = true;
    if (in_error == "Error/Code") error.code = text;
    if (in_error == "Error/Message") error.message = text;
  });
  if (!s.ok() || !is_error) return std::nullopt;
  return error;
}

StatusOr<S3Listing> ParseS3Listing(std::string_view xml) {
  S3Listing listing;
  ObjectInfo current;
  bool root = false;
  std::string bad_size;
  COHORT_RETURN_IF_ERROR(
      WalkXml(xml, "listing", [&](const std::string& path, const std::string& text) {
        if (path == "ListBucketResult") root = true;
        if (path == "ListBucketResult/IsTruncated") listing.truncated = text == "true";
        if (path == "ListBucketResult/Contents/Key") current.key = text;
        if (path == "ListBucketResult/Contents/Size") {
          auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), current.size);
          if (ec != std::errc() || end != text.data() + text.size() || current.size < 0) {
            bad_size = text.substr(0, 40);
          }
        }
        if (path == "ListBucketResult/Contents") {
          listing.objects.push_back(std::move(current));
          current = ObjectInfo{};
        }
      }));
  if (!root) return Status::Internal("the object store's listing is not a ListBucketResult");
  if (!bad_size.empty()) {
    return Status::Internal(
        fmt::format("the object store's listing has a bad Size \"{}\"", bad_size));
  }
  return listing;
}

StatusOr<std::string> ParseS3UploadId(std::string_view xml) {
  std::string id;
  COHORT_RETURN_IF_ERROR(
      WalkXml(xml, "multipart upload", [&](const std::string& path, const std::string& text) {
        if (path == "InitiateMultipartUploadResult/UploadId") id = text;
      }));
  if (id.empty())
    return Status::Internal("the object store's answer to a multipart upload has no UploadId");
  return id;
}

StatusOr<std::vector<S3Upload>> ParseS3Uploads(std::string_view xml) {
  std::vector<S3Upload> uploads;
  S3Upload current;
  bool root = false;
  COHORT_RETURN_IF_ERROR(
      WalkXml(xml, "list of uploads", [&](const std::string& path, const std::string& text) {
        if (path == "ListMultipartUploadsResult") root = true;
        if (path == "ListMultipartUploadsResult/Upload/Key") current.key = text;
        if (path == "ListMultipartUploadsResult/Upload/UploadId") current.upload_id = text;
        if (path == "ListMultipartUploadsResult/Upload") {
          uploads.push_back(std::move(current));
          current = S3Upload{};
        }
      }));
  if (!root)
    return Status::Internal(
        "the object store's list of uploads is not a ListMultipartUploadsResult");
  return uploads;
}

StatusOr<S3TemporaryCredentials> ParseS3AssumeRole(std::string_view xml) {
  S3TemporaryCredentials c;
  constexpr std::string_view kCredentials = "AssumeRoleResponse/AssumeRoleResult/Credentials/";
  COHORT_RETURN_IF_ERROR(
      WalkXml(xml, "AssumeRole answer", [&](const std::string& path, const std::string& text) {
        if (!path.starts_with(kCredentials)) return;
        std::string_view field = std::string_view(path).substr(kCredentials.size());
        if (field == "AccessKeyId") c.access_key = text;
        if (field == "SecretAccessKey") c.secret_key = text;
        if (field == "SessionToken") c.session_token = text;
        if (field == "Expiration") c.expiration = text;
      }));
  if (c.access_key.empty() || c.secret_key.empty() || c.session_token.empty()) {
    return Status::Internal(
        "the STS answer holds no credentials (AccessKeyId, SecretAccessKey, SessionToken)");
  }
  return c;
}

}  // namespace cohort::store
