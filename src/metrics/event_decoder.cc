#include "metrics/event_decoder.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <optional>
#include <string>

#include "common/strings.h"
#include "metrics/tensorboard_event.pb.h"

namespace cohort::metrics {
namespace {

namespace tb = cohort::metrics::tensorboard;

uint64_t LoadLittleEndian(std::string_view bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    v |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  }
  return v;
}

size_t ElementBytes(tb::DataType dtype) {
  switch (dtype) {
    case tb::DT_FLOAT:
    case tb::DT_INT32:
      return 4;
    case tb::DT_DOUBLE:
    case tb::DT_INT64:
      return 8;
    default:
      return 0;
  }
}

// The one element of a 0-d tensor whose dtype ElementBytes knows, from tensor_content.
double FromContent(tb::DataType dtype, std::string_view content) {
  uint64_t raw = LoadLittleEndian(content);
  switch (dtype) {
    case tb::DT_FLOAT:
      return std::bit_cast<float>(static_cast<uint32_t>(raw));
    case tb::DT_DOUBLE:
      return std::bit_cast<double>(raw);
    case tb::DT_INT32:
      return static_cast<int32_t>(static_cast<uint32_t>(raw));
    default:  // DT_INT64
      return static_cast<double>(static_cast<int64_t>(raw));
  }
}

// The one element from the typed repeated field. A tensor with no value at all is zero, as
// TensorFlow reads it (tensor_util.MakeNdarray); more than one is not a scalar.
std::optional<double> FromTypedField(const tb::TensorProto& t) {
  auto one = [](const auto& field) -> std::optional<double> {
    if (field.size() > 1) return std::nullopt;
    return field.empty() ? 0.0 : static_cast<double>(field[0]);
  };
  switch (t.dtype()) {
    case tb::DT_FLOAT:
      return one(t.float_val());
    case tb::DT_DOUBLE:
      return one(t.double_val());
    case tb::DT_INT32:
      return one(t.int_val());
    default:  // DT_INT64
      return one(t.int64_val());
  }
}

bool IsScalarTensor(const tb::Summary::Value& v) {
  const std::string& plugin = v.metadata().plugin_data().plugin_name();
  if (!plugin.empty() && plugin != "scalars") return false;  // histograms, text, hparams, ...
  const tb::TensorProto& t = v.tensor();
  return ElementBytes(t.dtype()) != 0 && t.tensor_shape().dim_size() == 0;
}

}  // namespace

StatusOr<std::vector<MetricPoint>> DecodeEventScalars(std::string_view record,
                                                      std::string_view run) {
  tb::Event event;
  if (!event.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return Status::InvalidArgument("record is not a TensorBoard Event");
  }
  std::vector<MetricPoint> points;
  if (!event.has_summary()) return points;
  for (const tb::Summary::Value& v : event.summary().value()) {
    if (v.tag().empty()) continue;
    std::optional<double> value;
    if (v.value_case() == tb::Summary::Value::kSimpleValue) {
      value = v.simple_value();
    } else if (v.value_case() == tb::Summary::Value::kTensor && IsScalarTensor(v)) {
      const tb::TensorProto& t = v.tensor();
      size_t bytes = ElementBytes(t.dtype());
      if (!t.tensor_content().empty()) {
        if (t.tensor_content().size() != bytes) {
          return Status::InvalidArgument(
              fmt::format("tag {}: a scalar of {} bytes has {} bytes of tensor content",
                          ValidUtf8(v.tag()), bytes, t.tensor_content().size()));
        }
        value = FromContent(t.dtype(), t.tensor_content());
      } else {
        value = FromTypedField(t);
        if (!value) {
          return Status::InvalidArgument(
              fmt::format("tag {}: a scalar tensor with more than one value", ValidUtf8(v.tag())));
        }
      }
    }
    if (!value) continue;
    points.push_back(
        MetricPoint{std::string(run), ValidUtf8(v.tag()), event.step(), event.wall_time(), *value});
  }
  return points;
}

}  // namespace cohort::metrics
