#include "metrics/event_test_writer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <bit>
#include <fstream>
#include <sstream>

#include "metrics/masked_crc32c.h"
#include "metrics/tensorboard_event.pb.h"
#include "metrics/tfrecord_reader.h"

namespace cohort::metrics::testing {

namespace tb = cohort::metrics::tensorboard;

std::string FileVersionEvent(double wall_time) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  return event.SerializeAsString();
}

std::string SimpleValueEvent(int64_t step, double wall_time, std::string_view tag, float value) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(std::string(tag));
  v->set_simple_value(value);
  return event.SerializeAsString();
}

std::string TensorScalarEvent(int64_t step, double wall_time, std::string_view tag, double value,
                              int dtype, bool in_content) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(std::string(tag));
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("scalars");
  tb::TensorProto* t = v->mutable_tensor();
  t->set_dtype(static_cast<tb::DataType>(dtype));
  t->mutable_tensor_shape();  // present and empty: 0-d
  auto little_endian = [](uint64_t bits, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    return out;
  };
  switch (dtype) {
    case tb::DT_FLOAT:
      if (in_content) {
        t->set_tensor_content(little_endian(std::bit_cast<uint32_t>(static_cast<float>(value)), 4));
      } else {
        t->add_float_val(static_cast<float>(value));
      }
      break;
    case tb::DT_DOUBLE:
      if (in_content) {
        t->set_tensor_content(little_endian(std::bit_cast<uint64_t>(value), 8));
      } else {
        t->add_double_val(value);
      }
      break;
    case tb::DT_INT32:
      if (in_content) {
        t->set_tensor_content(little_endian(static_cast<uint32_t>(static_cast<int32_t>(value)), 4));
      } else {
        t->add_int_val(static_cast<int32_t>(value));
      }
      break;
    case tb::DT_INT64:
      if (in_content) {
        t->set_tensor_content(little_endian(static_cast<uint64_t>(static_cast<int64_t>(value)), 8));
      } else {
        t->add_int64_val(static_cast<int64_t>(value));
      }
      break;
    default:
      ADD_FAILURE() << "no scalar of dtype " << dtype;
  }
  return event.SerializeAsString();
}

std::string HistogramEvent(int64_t step, double wall_time, std::string_view tag) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(std::string(tag));
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("histograms");
  tb::TensorProto* t = v->mutable_tensor();
  t->set_dtype(tb::DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(3);
  t->add_float_val(1);
  t->add_float_val(2);
  t->add_float_val(3);
  return event.SerializeAsString();
}

std::string RecordHeader(uint64_t length) {
  std::string h;
  for (int i = 0; i < 8; ++i) h.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  uint32_t crc = MaskedCrc32c(h);
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return h;
}

std::string Framed(std::initializer_list<std::string> events) {
  std::string out;
  for (const std::string& e : events) out += FrameTfRecord(e);
  return out;
}

std::filesystem::path SharedTf2Fixture() {
  return std::filesystem::path(COHORT_SHARED_DIR) / "fixtures/tfevents" /
         "events.out.tfevents.1585499054.host.11684.5.v2";
}

std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteWholeFile(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(out) << "cannot write " << path;
}

void AppendToFile(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(out) << "cannot append to " << path;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "cohort-metrics-XXXXXX").string();
  const char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace cohort::metrics::testing
